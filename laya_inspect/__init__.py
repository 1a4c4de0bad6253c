"""laya-inspect: which layers of a frozen network does each prediction rely on?

checkpoint → extract (HDF5 cache of every chosen layer) → fit-head (LAYA + baselines) → compare
(α vs Integrated Gradients, Grad-CAM, static weights, scored against leave-one-layer-out effects).
"""
__version__ = "0.1.0"
