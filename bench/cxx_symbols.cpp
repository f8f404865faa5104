// bench/cxx_symbols.cpp: a C++ program whose one compilation unit carries
// ~1 MB of DWARF (templates of <regex>, <map>, <unordered_map>, <sstream>,
// <functional>), allocating from ~70 distinct call sites. bench/profiler.sh
// traces it at rate 1: the run's cost is mostly naming those codes, which
// once meant walking the whole unit twice per code (5 ms each).
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>
#include <set>
#include <deque>
#include <list>
#include <functional>
int main(int argc, char **argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 2000;
  std::map<std::string, std::vector<int>> m;
  std::unordered_map<int, std::string> u;
  std::set<std::string> s;
  std::deque<long> d;
  std::list<std::string> l;
  std::regex re("([a-z]+)([0-9]+)");
  long sum = 0;
  for (int i = 0; i < n; i++) {
    std::ostringstream os;
    os << "key" << i;
    std::string k = os.str();
    m[k].push_back(i);
    u[i] = k + "x";
    s.insert(k);
    d.push_back(i);
    l.push_back(k);
    std::smatch mm;
    if (std::regex_search(k, mm, re)) sum += mm.size();
    std::function<long(long)> f = [&](long x) { return x + (long)k.size(); };
    sum += f(i);
  }
  std::cout << sum << " " << m.size() << " " << u.size() << " " << s.size() << "\n";
}
