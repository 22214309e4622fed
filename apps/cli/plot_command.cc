// parex plot: the loss (and accuracy) curves of a --metrics file, drawn by
// gnuplot (Debian's gnuplot-nox) as SVG or PNG. parex writes the data and
// the script; gnuplot draws: a plotting library in C++ would be more code
// than this for a worse picture.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "apps/cli/cli.h"
#include "base/file_io.h"

extern char** environ;

namespace parex::cli {
namespace fs = std::filesystem;
namespace {

struct Point {
  double step, loss, accuracy;
  bool has_accuracy;
};

// The training steps' points; `evals` gets the evaluations' (--eval-data).
StatusOr<std::vector<Point>> ReadMetrics(const std::string& path,
                                         std::vector<Point>* evals) {
  PAREX_ASSIGN_OR_RETURN(std::string text, ReadFileBytes(path));
  std::vector<Point> points;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    const nlohmann::json j =
        nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    const std::string where = "'" + path + "' line " + std::to_string(n);
    if (j.is_discarded() || !j.is_object())
      return InvalidArgument(where + ": not JSON");
    if (!j.contains("step") || !j["step"].is_number() || !j.contains("loss") ||
        !j["loss"].is_number()) {
      return InvalidArgument(
          where + ": no numeric \"step\" and \"loss\" (a --metrics file?)");
    }
    Point p{j["step"].get<double>(), j["loss"].get<double>(), 0, false};
    if (j.contains("accuracy") && j["accuracy"].is_number()) {
      p.accuracy = j["accuracy"].get<double>();
      p.has_accuracy = true;
    }
    if (!std::isfinite(p.step) || !std::isfinite(p.loss)) {
      return InvalidArgument(where +
                             ": a step or loss that is not a finite number");
    }
    (j.contains("eval") ? evals : &points)->push_back(p);
  }
  if (points.empty())
    return InvalidArgument("'" + path + "' holds no metrics lines");
  return points;
}

// Runs gnuplot on `script`; its stderr goes to ours.
Status RunGnuplot(const std::string& script) {
  std::vector<std::string> argv = {"gnuplot", script};
  std::vector<char*> raw;
  for (std::string& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  pid_t pid = 0;
  const int rc =
      posix_spawnp(&pid, "gnuplot", nullptr, nullptr, raw.data(), environ);
  if (rc != 0) {
    return NotFound(std::string("cannot run gnuplot (") + std::strerror(rc) +
                    "): apt-get install gnuplot-nox");
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    return Internal("gnuplot failed on the script '" + script +
                    "' (its message above)");
  }
  return Status::Ok();
}

// `text` as a gnuplot string in single quotes (a quote in it doubled): a
// path or title cannot end the string and run commands of its own.
std::string Quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

// Step, loss, the loss's running mean over `window` steps and accuracy's,
// one line per point.
std::string SmoothedData(const std::vector<Point>& points, size_t window) {
  std::ostringstream data;
  double sum = 0, acc_sum = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    sum += p.loss;
    acc_sum += p.accuracy;
    if (i >= window) {
      sum -= points[i - window].loss;
      acc_sum -= points[i - window].accuracy;
    }
    const double n = static_cast<double>(std::min(i + 1, window));
    char line[160];
    std::snprintf(line, sizeof(line), "%.17g %.9g %.9g %.9g\n", p.step, p.loss,
                  sum / n, acc_sum / n);
    data << line;
  }
  return data.str();
}

std::string EvalData(const std::vector<Point>& evals) {
  std::ostringstream data;
  for (const Point& p : evals) {
    char line[120];
    std::snprintf(line, sizeof(line), "%.17g %.9g %.9g\n", p.step, p.loss,
                  p.accuracy);
    data << line;
  }
  return data.str();
}

// The files of one plot: its data, its evaluations' and the script.
struct PlotFiles {
  std::string data, eval, script;
};

std::string PlotScript(const PlotOptions& o, const PlotFiles& files,
                       size_t window, bool accuracy, bool evals) {
  const bool svg = fs::path(o.output).extension() == ".svg";
  std::ostringstream gp;
  gp << "set terminal " << (svg ? "svg" : "pngcairo") << " size 900,500"
     << (svg ? " dynamic" : "") << "\n"
     << "set output " << Quoted(o.output) << "\n"
     << "set title "
     << Quoted(o.title.empty() ? fs::path(o.metrics).filename().string()
                               : o.title)
     << " noenhanced\n"
     << "set xlabel 'step'\nset ylabel 'loss'\nset grid\nset key outside top "
        "center horizontal\n";
  if (accuracy) {
    gp << "set y2label 'train accuracy'\nset y2range [0:1]\nset y2tics\nset "
          "ytics nomirror\n";
  }
  gp << "plot " << Quoted(files.data)
     << " using 1:2 with lines lc rgb '#b0c4de' title 'loss', "
     << "'' using 1:3 with lines lw 2 lc rgb '#1f4e99' title 'loss, mean of "
     << window << "'";
  if (accuracy) {
    gp << ", '' using 1:4 axes x1y2 with lines lw 2 lc rgb '#c0392b' title "
          "'accuracy, mean of "
       << window << "'";
  }
  if (evals) {
    gp << ", " << Quoted(files.eval)
       << " using 1:2 with linespoints pt 7 lc rgb '#1e8449' "
       << "title 'evaluation loss'";
    if (accuracy) {
      gp << ", '' using 1:3 axes x1y2 with linespoints pt 5 lc rgb '#e67e22' "
         << "title 'evaluation accuracy'";
    }
  }
  gp << "\n";
  return gp.str();
}

}  // namespace

int RunPlot(const PlotOptions& o) {
  const std::string cmd = "plot";
  const std::string ext = fs::path(o.output).extension().string();
  if (ext != ".svg" && ext != ".png") {
    return Fail(cmd,
                InvalidArgument("-o '" + o.output +
                                "': the picture must be .svg or .png"),
                kExitUsage);
  }
  if (Status s = CheckOutputFile(o.output, "-o"); !s.ok()) return Fail(cmd, s);
  std::vector<Point> evals;
  StatusOr<std::vector<Point>> points = ReadMetrics(o.metrics, &evals);
  if (!points.ok()) return Fail(cmd, points.status());
  bool accuracy = false;
  for (const Point& p : *points) accuracy = accuracy || p.has_accuracy;
  // The loss per step is noisy: a running mean over ~1/50 of the run on top.
  const size_t window = std::max<size_t>(1, points->size() / 50);
  const std::string stem = o.output + ".parex-plot";
  const PlotFiles files{stem + ".dat", stem + ".eval.dat", stem + ".gp"};
  Status written = WriteFileBytes(files.data, SmoothedData(*points, window));
  if (written.ok() && !evals.empty()) {
    written = WriteFileBytes(files.eval, EvalData(evals));
  }
  if (written.ok()) {
    written = WriteFileBytes(
        files.script, PlotScript(o, files, window, accuracy, !evals.empty()));
  }
  if (written.ok()) written = RunGnuplot(files.script);
  std::error_code ec;
  fs::remove(files.data, ec);
  fs::remove(files.script, ec);
  fs::remove(files.eval, ec);
  if (!written.ok()) return Fail(cmd, written);
  std::printf("plotted %zu steps of %s into %s\n", points->size(),
              o.metrics.c_str(), o.output.c_str());
  return kExitOk;
}

}  // namespace parex::cli
