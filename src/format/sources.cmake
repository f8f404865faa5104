# format: the trace reader and writer (libc and base only).
set(MT_FORMAT_SOURCES
  src/format/btcodec.c
  src/format/loccodec.c
  src/format/reader.c
  src/format/reader_events.c
  src/format/reader_many.c
  src/format/span.c
  src/format/status.c
  src/format/trace_file.c
  src/format/writer.c)
