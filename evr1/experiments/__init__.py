"""The experiments that ship with evr1: `quickstart` (the tuned CPU run), its `ablations`, and the paper recipes
`qwen25vl_7b_video`, `qwen3vl_8b_video` and `qwen35_video`.

They are found by name after the project's own `experiments/NAME.py` (which therefore shadows one of these), so
`evr1 run quickstart` and `load_config("quickstart")` work from any folder, and an experiment of one's own can
build on them. Like a project's experiment files they are loaded as files (`evr1.experiment_files`), copied into
each run directory, and not meant to be imported as `evr1.experiments.NAME`."""
