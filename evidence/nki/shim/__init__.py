"""What kernel files see as `neuronxcc.nki` (and `nki`): thin functions that call the dispatcher.

These modules are ordinary modules of this package; `evidence.nki.loader` maps the NKI import
names onto them only while a kernel is loaded or run.
"""
