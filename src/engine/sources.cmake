# engine: the sampling engine.
set(MT_ENGINE_SOURCES src/engine/engine.c src/engine/mathlib.c src/engine/ziggurat.c)
