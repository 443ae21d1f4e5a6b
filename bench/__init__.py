"""tilesmith's benchmark: whole-operation QEMU profiles with llvm-mca modeled cycles per core
(`python3 -m bench`, see bench/__main__.py) and the per-kernel llvm-mca table
(bench/kernels_mca.py)."""
