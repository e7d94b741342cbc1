"""ONNX inference, input encoding, labels and metrics of the WSD + regard model (no torch)."""
