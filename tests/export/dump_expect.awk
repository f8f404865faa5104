# From memtrace's own dump of a trace (dump_trace's text, see
# ../shared/traces/README.md), computes what `memtrace export` must write,
# in pprof_text.awk's sample form: one line per (source, stack)
#   source=S <tab> STACK <tab> ALLOC_OBJECTS ALLOC_BYTES INUSE_OBJECTS INUSE_BYTES
# (no "source=" label, "-", when merge=1). It is an independent derivation:
# memtrace's dump resolves the locations, this script applies the estimators
# of docs/estimators.md itself. Objects are printed unrounded (%.3f), bytes as
# samples x period.
#   -v rate=R      the trace's sample rate per word
#   -v period=P    bytes per sample (the profile's period)
#   -v at=T        the snapshot in us since the start, or -1 for the end
#   -v merge=0|1
# The backtrace as NAME;NAME;... with gsub rather than a loop of
# concatenations, which is quadratic in the depth (stacks here reach
# thousands of frames).
function frames(   s) {
  s = $0
  sub(/^[^:]*: */, "", s) # the fields before the backtrace hold no ':'
  sub(/ +$/, "", s)
  # DEFNAME@FILE:LINE:START-END; names may hold '@' ("Stdlib.(@)"), files not
  gsub(/@[^@ ]*:[0-9]+:[0-9]+-[0-9]+/, "", s)
  gsub(/ +/, ";", s)
  return s == "" ? "(no backtrace)" : s
}
$3 == "alloc" || $3 == "alloc_major" || $3 == "alloc_ext" {
  id = $2 + 0
  src = $3 == "alloc" ? "minor" : $3 == "alloc_major" ? "major" : "external"
  key[id] = (merge ? "-" : "source=" src) "\t" frames()
  t0[id] = $1 + 0
  ns[id] = $4 + 0
  len = substr($5, 5) + 0
  w = len + (src != "external") # OCaml blocks are sampled over their header too
  p = 1 - exp(w * log(1 - rate))
  ht[id] = rate >= 1 ? 1 : 1 / p
  next
}
$3 == "collect" { t1[$2 + 0] = $1 + 0 }
END {
  for (id in key) {
    if (at >= 0 && t0[id] > at) continue
    k = key[id]
    ao[k] += ht[id]; as[k] += ns[id]
    alive = at < 0 ? !(id in t1) : !(id in t1) || t1[id] > at
    if (alive) { io[k] += ht[id]; is[k] += ns[id] }
  }
  for (k in ao) printf "%s\t%.3f %d %.3f %d\n", k, ao[k], as[k] * period, io[k], is[k] * period
}
