"""The feature cache's whole life: `extract` (one process, `extract.py`; torchrun shards, `shards.py`;
an in-memory `nn.Module`, `module_extract.py`) runs rows through the model (`rows.py`, which also
records their provenance) into the writer (`writer.py`; `partial.py` says whether an interrupted
extraction may be resumed); `store.py` reads the finished file; `schema.py`
and `extract_config.py` say what it holds; `frames.py` turns it into pandas tables. Nothing is imported
here, so `import laya_inspect.cache.extract_config` stays free of torch and h5py."""
