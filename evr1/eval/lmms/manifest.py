"""The `lmms_eval.models` entry point: `--model evr1` (our engines) and `--model evr1_scripted` (a table)."""

from lmms_eval.models.registry_v2 import ModelManifest

MANIFESTS = [
    ModelManifest("evr1", chat_class_path="evr1.eval.lmms.model.Evr1Chat"),
    ModelManifest("evr1_scripted", chat_class_path="evr1.eval.lmms.model.ScriptedChat"),
]
