// C++ code with deep inlining (templates, lambdas, standard containers) for
// test_scopes: compiled at -O2 -g, its units hold many inlined subroutines,
// lexical blocks inside them, and functions nested in namespaces and
// classes.
#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <string>
#include <vector>

namespace scopes_cases {

template <typename T> struct Acc {
  std::vector<T> v;
  void add(T x) {
    if (x % 3 == 0) {
      T y = x * 2; // a lexical block in an inlined function
      v.push_back(y);
    } else {
      v.push_back(x);
    }
  }
  T sum() const { return std::accumulate(v.begin(), v.end(), T(0)); }
};

static inline long twice(long x) { return x * 2; }
static inline long nested(long x) { return twice(x) + twice(x + 1); }

} // namespace scopes_cases

extern "C" long scopes_cases_run(int n) {
  scopes_cases::Acc<long> a;
  std::map<std::string, long> m;
  for (int i = 0; i < n; i++) {
    a.add(scopes_cases::nested(i));
    m[std::to_string(i % 17)] += i;
  }
  std::vector<long> w(a.v);
  std::sort(w.begin(), w.end(), [](long x, long y) { return x > y; });
  std::function<long(long)> f = [&](long x) { return x + (long)m.size(); };
  return a.sum() + f(w.empty() ? 0 : w[0]);
}
