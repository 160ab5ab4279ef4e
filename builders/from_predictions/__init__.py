"""The shared kernel of the builders made from real models' predictions (GSM-MC, MATH-MC, PythonIO;
Zhang et al., 2024): distractor pools, multiple-choice sets, and collecting the predictions.

* :mod:`.pools`: the generic pool of distinct wrong answers (``Candidate``, ``Pool``, ``Equivalence``,
  ``build_pool``, the pool report);
* :mod:`.sets`: turning pools into multiple-choice sets, their invariants and statistics;
* :mod:`.collect`: the distractor options of a builder, and reading or generating predictions;
* :mod:`.generate`: asking OpenAI-compatible endpoints for predictions.

Each builder brings its own answers module (extraction and equivalence) and prompts.
"""
