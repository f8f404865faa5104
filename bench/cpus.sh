# bench/cpus.sh: sourced by the benchmarks that pin runs to one CPU.
#
# allowed_cpus: sets the array `cpus` to the CPUs this process may run on
# (/proc/self/status's Cpus_allowed_list: "0-1", "0,2-3"), one number each;
# empty without taskset, which the pinning needs.
allowed_cpus() {
  cpus=()
  command -v taskset > /dev/null || return 0
  local parts p
  IFS=, read -ra parts <<< "$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)"
  for p in "${parts[@]}"; do
    if [[ $p == *-* ]]; then cpus+=($(seq "${p%-*}" "${p#*-}")); elif [ -n "$p" ]; then cpus+=("$p"); fi
  done
}
