// svm2csc: a libsvm file (as strata_gen lasso writes it: "y idx:val ...", 1-based increasing
// indices) to a binary column-compressed matrix that R reads with readBin (lasso_glmnet.R):
//   int64 n, d, nnz; double y[n]; int32 p[d+1]; int32 i[nnz] (0-based rows); double x[nnz]
// Part of glmnet's whole-process time in benchmarks/lasso_scale.sh (R has no fast libsvm reader).
// Build: g++ -O2 -march=native -std=c++20 svm2csc.cpp -o svm2csc
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static void die(const std::string& m) {
  std::fprintf(stderr, "svm2csc: %s\n", m.c_str());
  std::exit(1);
}

int main(int argc, char** argv) {
  if (argc != 3) die("usage: svm2csc IN.svm OUT.bin");
  FILE* f = std::fopen(argv[1], "rb");
  if (!f) die(std::string("cannot open ") + argv[1]);
  std::fseek(f, 0, SEEK_END);
  const long size = std::ftell(f);
  std::fseek(f, 0, SEEK_SET);
  std::string text(static_cast<std::size_t>(size), '\0');
  if (std::fread(text.data(), 1, text.size(), f) != text.size()) die("read error");
  std::fclose(f);
  std::vector<double> y, val;
  std::vector<std::int32_t> col;
  std::vector<std::int64_t> row_end;
  const std::size_t colons = static_cast<std::size_t>(std::count(text.begin(), text.end(), ':'));
  val.reserve(colons), col.reserve(colons);
  std::int64_t d = 0;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r')) ++p;
    if (p >= end) break;
    double label;
    auto r = std::from_chars(p, end, label);
    if (r.ec != std::errc()) die("bad label");
    p = r.ptr;
    y.push_back(label);
    while (p < end && *p != '\n') {
      while (p < end && *p == ' ') ++p;
      if (p >= end || *p == '\n' || *p == '\r') break;
      std::int64_t idx;
      r = std::from_chars(p, end, idx);
      if (r.ec != std::errc() || *r.ptr != ':') die("bad index");
      double v;
      auto r2 = std::from_chars(r.ptr + 1, end, v);
      if (r2.ec != std::errc()) die("bad value");
      p = r2.ptr;
      col.push_back(static_cast<std::int32_t>(idx - 1));
      val.push_back(v);
      if (idx > d) d = idx;
    }
    row_end.push_back(static_cast<std::int64_t>(col.size()));
  }
  const std::int64_t n = static_cast<std::int64_t>(y.size()), nnz = static_cast<std::int64_t>(col.size());
  std::vector<std::int32_t> cp(static_cast<std::size_t>(d) + 1, 0), ri(static_cast<std::size_t>(nnz));
  std::vector<double> cx(static_cast<std::size_t>(nnz));
  for (auto c : col) ++cp[c + 1];
  for (std::int64_t j = 0; j < d; ++j) cp[j + 1] += cp[j];
  std::vector<std::int32_t> at(cp.begin(), cp.end() - 1);
  std::int64_t k = 0;
  for (std::int64_t i = 0; i < n; ++i)
    for (; k < row_end[i]; ++k) {
      const auto q = at[col[k]]++;
      ri[q] = static_cast<std::int32_t>(i);
      cx[q] = val[k];
    }
  FILE* o = std::fopen(argv[2], "wb");
  if (!o) die(std::string("cannot write ") + argv[2]);
  const std::int64_t hdr[3] = {n, d, nnz};
  std::fwrite(hdr, sizeof hdr, 1, o);
  std::fwrite(y.data(), sizeof(double), y.size(), o);
  std::fwrite(cp.data(), sizeof(std::int32_t), cp.size(), o);
  std::fwrite(ri.data(), sizeof(std::int32_t), ri.size(), o);
  std::fwrite(cx.data(), sizeof(double), cx.size(), o);
  if (std::fclose(o) != 0) die("write error");
  std::fprintf(stderr, "svm2csc: n=%lld d=%lld nnz=%lld\n", (long long)n, (long long)d, (long long)nnz);
  return 0;
}
