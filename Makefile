# tilesmith — AArch64 GEMM micro-kernel generator.
#   make gen ARCH=v86      generate kernels + drivers into out/$(ARCH)/ (v92: + SME kernels)
#   make test              every test (Python units + generated code under qemu-aarch64)
# Both install missing tools first (scripts/ensure-deps.sh; a no-op when all is there).

PYTHON := /usr/bin/python3
ARCH   ?= v86
PREFIX ?= ts_
INST   ?= auto
CPU    ?= generic
OUT    ?= out/$(ARCH)

.PHONY: all deps deps-gen deps-bench gen verify tiles test bench clean
all: gen

deps-gen:
	@sh scripts/ensure-deps.sh gen
deps:
	@sh scripts/ensure-deps.sh all

gen: deps-gen
	$(PYTHON) -m gen generate --arch '$(ARCH)' --prefix '$(PREFIX)' --inst '$(INST)' --cpu '$(CPU)' --out '$(OUT)'

# Check every .inst word of the generated kernels against GNU objdump.
verify: deps gen
	$(PYTHON) -m encoder verify $(OUT)/*.S

tiles: deps-gen
	$(PYTHON) -m gen tiles --arch '$(ARCH)' --cpu '$(CPU)'

test: deps
	$(PYTHON) -m pytest -q tests

deps-bench:
	@sh scripts/ensure-deps.sh bench

# Whole-operation profiles per dispatch path (QEMU plugin) + llvm-mca cycles per core:
# writes bench/report.md, bench/report.json, charts in bench/out/ (bench/__main__.py).
bench: deps-bench
	$(PYTHON) -m bench --arch '$(ARCH)' --cpu '$(CPU)' --inst '$(INST)'

clean:
	rm -rf out build bench/out bench/report.md bench/report.json
