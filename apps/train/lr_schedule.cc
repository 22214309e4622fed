#include "apps/train/lr_schedule.h"

#include <cmath>
#include <cstdlib>
#include <utility>
#include <vector>

namespace parex::train {
namespace {

Status Bad(const std::string& spec, const std::string& why) {
  return InvalidArgument("--lr-schedule '" + spec + "': " + why);
}

// Comma-separated finite numbers; false on anything else.
bool Numbers(const std::string& text, std::vector<double>* out) {
  out->clear();
  size_t begin = 0;
  while (true) {
    const size_t comma = text.find(',', begin);
    const std::string item =
        text.substr(begin, comma == std::string::npos ? comma : comma - begin);
    if (item.empty()) return false;
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (end != item.c_str() + item.size() || !std::isfinite(v)) return false;
    out->push_back(v);
    if (comma == std::string::npos) return true;
    begin = comma + 1;
  }
}

StatusOr<LrSchedule> Constant(const std::string& spec,
                              const std::string& rest) {
  std::vector<double> a;
  if (!Numbers(rest, &a) || a.size() != 1) {
    return Bad(spec, "expected constant:LR");
  }
  const double lr = a[0];
  return LrSchedule([lr](int64_t) { return lr; });
}

StatusOr<LrSchedule> Piecewise(const std::string& spec,
                               const std::string& rest) {
  const size_t sep = rest.find(':');
  std::vector<double> bounds, values;
  if (sep == std::string::npos || !Numbers(rest.substr(0, sep), &bounds) ||
      !Numbers(rest.substr(sep + 1), &values)) {
    return Bad(spec, "expected piecewise:B1,B2,...:V0,V1,...");
  }
  if (values.size() != bounds.size() + 1) {
    return Bad(spec, "needs one value more than boundaries (" +
                         std::to_string(bounds.size()) + " boundaries, " +
                         std::to_string(values.size()) + " values)");
  }
  for (size_t i = 1; i < bounds.size(); ++i) {
    if (bounds[i] <= bounds[i - 1])
      return Bad(spec, "boundaries must increase");
  }
  return LrSchedule([bounds, values](int64_t step) {
    size_t i = 0;
    while (i < bounds.size() && static_cast<double>(step) >= bounds[i]) ++i;
    return values[i];
  });
}

StatusOr<LrSchedule> Exponential(const std::string& spec,
                                 const std::string& rest) {
  std::vector<double> a;
  if (!Numbers(rest, &a) || a.size() != 2) {
    return Bad(spec, "expected exponential:LR,GAMMA");
  }
  const double lr = a[0], gamma = a[1];
  return LrSchedule([lr, gamma](int64_t step) {
    return lr * std::pow(gamma, static_cast<double>(step));
  });
}

StatusOr<LrSchedule> Cosine(const std::string& spec, const std::string& rest) {
  std::vector<double> a;
  if (!Numbers(rest, &a) || a.size() < 2 || a.size() > 3 || a[1] <= 0) {
    return Bad(spec, "expected cosine:LR,T_MAX[,ETA_MIN] with T_MAX > 0");
  }
  const double lr = a[0], t_max = a[1], eta_min = a.size() == 3 ? a[2] : 0.0;
  return LrSchedule([lr, t_max, eta_min](int64_t step) {
    return eta_min + (lr - eta_min) * (1 + std::cos(M_PI * step / t_max)) / 2;
  });
}

StatusOr<LrSchedule> Warmup(const std::string& spec, const std::string& rest) {
  const size_t sep = rest.find(':');
  std::vector<double> a;
  if (!Numbers(rest.substr(0, sep), &a) || a.size() != 3 || a[0] < 1 ||
      a[0] != std::floor(a[0])) {
    return Bad(spec,
               "expected warmup:STEPS,START,END[:INNER] with whole STEPS >= 1");
  }
  const int64_t steps = static_cast<int64_t>(a[0]);
  const double start = a[1], end = a[2];
  LrSchedule inner = [end](int64_t) { return end; };
  if (sep != std::string::npos) {
    StatusOr<LrSchedule> parsed = ParseLrSchedule(rest.substr(sep + 1));
    if (!parsed.ok()) {
      return Bad(spec, "its inner schedule: " + parsed.status().message());
    }
    inner = *parsed;
  }
  return LrSchedule([steps, start, end, inner](int64_t step) {
    if (step < steps) {
      return start + (end - start) * static_cast<double>(step) / steps;
    }
    return inner(step - steps);
  });
}

}  // namespace

StatusOr<LrSchedule> ParseLrSchedule(const std::string& spec) {
  using Parser =
      StatusOr<LrSchedule> (*)(const std::string&, const std::string&);
  static const std::pair<const char*, Parser> kKinds[] = {
      {"constant", Constant},
      {"piecewise", Piecewise},
      {"exponential", Exponential},
      {"cosine", Cosine},
      {"warmup", Warmup}};
  const size_t colon = spec.find(':');
  if (colon == std::string::npos) {
    return Bad(spec,
               "expected KIND:ARGS (constant, piecewise, exponential, cosine, "
               "warmup)");
  }
  const std::string kind = spec.substr(0, colon);
  for (const auto& [name, parse] : kKinds) {
    if (kind == name) return parse(spec, spec.substr(colon + 1));
  }
  return Bad(spec, "unknown schedule '" + kind +
                       "' (constant, piecewise, exponential, cosine, warmup)");
}

Status SetLearningRate(ParallelExecutor* pe,
                       const std::vector<std::string>& vars, double rate) {
  for (const std::string& name : vars) {
    // The dtype of place 0's copy (every place's is checked by SetOnPlaces).
    const Variable* v = pe->local_scope(0)->FindVar(name);
    const Tensor* t = v != nullptr ? v->GetTensor() : nullptr;
    if (t == nullptr || t->numel() != 1 ||
        (t->dtype() != DType::kFP32 && t->dtype() != DType::kFP64)) {
      return InvalidArgument("--lr-schedule: '" + name + "' on " +
                             pe->places()[0].ToString() +
                             " is not a one-element float tensor");
    }
    Tensor value(t->dtype(), t->dims());
    if (t->dtype() == DType::kFP32) {
      value.data<float>()[0] = static_cast<float>(rate);
    } else {
      value.data<double>()[0] = rate;
    }
    PAREX_RETURN_IF_ERROR(
        pe->SetOnPlaces(name, value).WithContext("--lr-schedule"));
  }
  return Status::Ok();
}

}  // namespace parex::train
