# TypeScript client (see clients/typescript/README.md). Included by the root Makefile; make runs
# from the repository root. `ts-install` runs `npm ci` (the tools pinned in package-lock.json,
# buf among them) only when node_modules is missing or older than the lock file; `ts-check`
# fails when src/gen is not what protoc-gen-es makes of proto/, or when tsc finds an error.
TS_DIR := clients/typescript
TS_STAMP := $(TS_DIR)/node_modules/.ts-install.stamp

.PHONY: ts-install ts-check
ts-install: $(TS_STAMP)

$(TS_STAMP): $(TS_DIR)/package.json $(TS_DIR)/package-lock.json
	cd $(TS_DIR) && npm ci --no-audit --no-fund
	touch $@

ts-check: ts-install
	cd $(TS_DIR) && npm run --silent check:generated
	cd $(TS_DIR) && npm run --silent typecheck
