# analysis: a trace loaded into tables, and every answer computed on them:
# the filter language, rankings, leaks, callers, diffs, call trees and flame
# graphs, statistics, the live heap, profiles, and their JSON documents.
set(MT_ANALYSIS_SOURCES
  src/analysis/backtraces.c
  src/analysis/callers.c
  src/analysis/calltree.c
  src/analysis/diff.c
  src/analysis/estimate.c
  src/analysis/filter.c
  src/analysis/flame.c
  src/analysis/flame_diff.c
  src/analysis/follow.c
  src/analysis/frames.c
  src/analysis/json_answers.c
  src/analysis/leaks_traces.c
  src/analysis/load.c
  src/analysis/load_intern.c
  src/analysis/load_keep.c
  src/analysis/profile.c
  src/analysis/rank.c
  src/analysis/rank_stacks.c
  src/analysis/rank_traces.c
  src/analysis/rss.c
  src/analysis/select.c
  src/analysis/side.c
  src/analysis/stats.c
  src/analysis/tables.c
  src/analysis/timeline.c
  src/analysis/timeline_load.c
  src/analysis/trace_rates.c)
