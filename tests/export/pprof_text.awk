# Reads the text form of a pprof Profile (protoc --decode) and prints one
# line per sample, resolving every id through the profile's own tables:
#   LABELS <tab> STACK <tab> VALUES
# LABELS is "key=value,..." ("-" when none); STACK is the frames from the
# root to the leaf joined by ';', each location expanded into its lines from
# the caller to the innermost inlined function, a location without lines
# shown as $ADDRESS; VALUES are the sample's values separated by spaces.
# With -v what=header it prints the profile's other fields instead, one a
# line, strings resolved: "sample_type TYPE UNIT" (in order), "period_type
# TYPE UNIT", "period N", "default_sample_type NAME", "time_nanos N",
# "duration_nanos N", "comment TEXT", "mapping FILE FLAGS...". With
# -v what=locations: "location ADDRESS FN:LINE:COLUMN ..." with the lines in
# their stored order; with -v what=functions: "function NAME SYSNAME FILE".
# It checks what pprof checks: string_table[0] is "", every id a sample or
# location names exists, ids are unique, string indices are in range; and
# that strings are stored once. It exits 1 on any failure, so a profile
# pprof would reject does not pass silently.
function unquote(s) {
  s = substr(s, 2, length(s) - 2)
  gsub(/\\'/, "'", s); gsub(/\\"/, "\"", s); gsub(/\\\\/, "\\", s)
  return s
}
function bad(msg) { print "resolve.awk: " msg > "/dev/stderr"; err = 1 }
function str(i) {
  if (i == "") i = 0
  if (!(i in strs)) bad("string index " i " out of range")
  return strs[i]
}
BEGIN { nstr = 0; ns = 0; err = 0 }
# Most lines are a sample's location ids: test for them first.
depth == 1 && top == "sample" && $1 == "location_id:" { loc[ns, ++nloc[ns]] = $2; next }
depth == 1 && top == "sample" && $1 == "value:" { val[ns, ++nval[ns]] = $2; next }
/^string_table: / { v = unquote(substr($0, 15))
  if (nstr > 0 && (v in seenstr)) bad("string \"" v "\" stored twice")
  seenstr[v] = 1; strs[nstr++] = v; next }
/^[a-z_]+: / { scal[++nscal] = $1 " " $2; next }
/^[a-z_]+ \{$/ { top = $1; depth = 1; cur_line = -1
  if (top == "sample") { ns++; nloc[ns] = 0; nval[ns] = 0; lab[ns] = "" }
  if (top == "location") { lid = ""; nl = 0; addr = 0 }
  if (top == "function") { fid = ""; fname = 0; fsys = 0; ffile = 0 }
  if (top == "sample_type" || top == "period_type") { vt = 0; vu = 0 }
  if (top == "mapping") { mfile = 0; mflags = "" }
  next }
/^  [a-z_]+ \{$/ { sub_ = $1; depth = 2
  if (top == "sample" && sub_ == "label") { lk = 0; lv = 0 }
  if (top == "location" && sub_ == "line") { nl++; lf[nl] = ""; lline[nl] = 0; lcol[nl] = 0 }
  next }
/^  \}$/ { depth = 1
  if (top == "sample" && sub_ == "label") lab[ns] = lab[ns] (lab[ns] == "" ? "" : ",") lk "=" lv
  next }
/^\}$/ { depth = 0
  if (top == "location") {
    if (lid == "") bad("location without id")
    if (lid in locs) bad("location " lid " twice")
    locs[lid] = 1; laddr[lid] = addr; lnl[lid] = nl; lorder[++nlocs] = lid
    for (k = 1; k <= nl; k++) { llf[lid, k] = lf[k]; llline[lid, k] = lline[k]; llcol[lid, k] = lcol[k] }
  }
  if (top == "function") {
    if (fid == "") bad("function without id")
    if (fid in fn) bad("function " fid " twice")
    fn[fid] = fname; fnsys[fid] = fsys; fnfile[fid] = ffile; forder[++nfns] = fid
  }
  if (top == "sample_type" || top == "period_type") vts[++nvts] = top " " vt " " vu
  if (top == "mapping") maps[++nmaps] = mfile mflags
  next }
depth == 2 && top == "sample" && $1 == "key:" { lk = $2; next }
depth == 2 && top == "sample" && $1 == "str:" { lv = $2; next }
depth == 1 && top == "location" && $1 == "id:" { lid = $2; next }
depth == 1 && top == "location" && $1 == "address:" { addr = $2; next }
depth == 2 && top == "location" && $1 == "function_id:" { lf[nl] = $2; next }
depth == 2 && top == "location" && $1 == "line:" { lline[nl] = $2; next }
depth == 2 && top == "location" && $1 == "column:" { lcol[nl] = $2; next }
depth == 1 && top == "function" && $1 == "id:" { fid = $2; next }
depth == 1 && top == "function" && $1 == "name:" { fname = $2; next }
depth == 1 && top == "function" && $1 == "system_name:" { fsys = $2; next }
depth == 1 && top == "function" && $1 == "filename:" { ffile = $2; next }
depth == 1 && (top == "sample_type" || top == "period_type") && $1 == "type:" { vt = $2; next }
depth == 1 && (top == "sample_type" || top == "period_type") && $1 == "unit:" { vu = $2; next }
depth == 1 && top == "mapping" && $1 == "filename:" { mfile = $2; next }
depth == 1 && top == "mapping" && $2 == "true" { mflags = mflags " " substr($1, 1, length($1) - 1); next }
function header(   k, f) {
  for (k = 1; k <= nvts; k++) { split(vts[k], f, " "); print f[1], str(f[2]), str(f[3]) }
  for (k = 1; k <= nmaps; k++) { split(maps[k], f, " "); print "mapping", str(f[1]) substr(maps[k], length(f[1]) + 1) }
  for (k = 1; k <= nscal; k++) {
    split(scal[k], f, " "); sub(/:$/, "", f[1])
    if (f[1] == "comment" || f[1] == "default_sample_type" || f[1] == "drop_frames" ||
        f[1] == "keep_frames" || f[1] == "doc_url") print f[1], str(f[2])
    else print f[1], f[2]
  }
}
function locations(   k, j, id, out) {
  for (k = 1; k <= nlocs; k++) {
    id = lorder[k]; out = "location " laddr[id]
    for (j = 1; j <= lnl[id]; j++) out = out " " str(fn[llf[id, j]]) ":" llline[id, j] ":" llcol[id, j]
    print out
  }
}
function functions(   k, id) {
  for (k = 1; k <= nfns; k++) { id = forder[k]; print "function", str(fn[id]), str(fnsys[id]), str(fnfile[id]) }
}
END {
  if (nstr == 0 || strs[0] != "") bad("string_table[0] is not \"\"")
  if (what == "header") { header(); exit err }
  if (what == "locations") { locations(); exit err }
  if (what == "functions") { functions(); exit err }
  for (s = 1; s <= ns; s++) {
    labels = ""
    n = split(lab[s], kv, ",")
    for (k = 1; k <= n; k++) {
      split(kv[k], p, "=")
      labels = labels (k > 1 ? "," : "") str(p[1]) "=" str(p[2])
    }
    # Printed piece by piece: building the line by concatenation is
    # quadratic in the depth, and stacks reach thousands of frames.
    printf "%s\t", (labels == "" ? "-" : labels)
    sep = ""
    for (k = nloc[s]; k >= 1; k--) {
      id = loc[s, k]
      if (!(id in locs)) { bad("sample " s ": no location " id); continue }
      if (!(id in lstr)) {
        if (lnl[id] == 0) lstr[id] = "$" laddr[id]
        else {
          lstr[id] = ""
          for (j = lnl[id]; j >= 1; j--) {
            f = llf[id, j]
            if (!(f in fn)) { bad("location " id ": no function " f); continue }
            lstr[id] = lstr[id] (j == lnl[id] ? "" : ";") str(fn[f])
          }
        }
      }
      printf "%s%s", sep, lstr[id]
      sep = ";"
    }
    vals = ""
    for (k = 1; k <= nval[s]; k++) vals = vals (k > 1 ? " " : "") val[s, k]
    printf "\t%s\n", vals
  }
  exit err
}
