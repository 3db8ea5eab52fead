# Shared by scripts/dev and scripts/test: install what is missing, start what is needed, say so.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export PATH="$HOME/.cargo/bin:$PATH"
PGHOST_DIR=/var/run/postgresql

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
die() { printf '\033[31merror:\033[0m %s\n' "$*" >&2; exit 1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

APT_UPDATED=""
apt_install() {
  command -v apt-get >/dev/null || die "apt-get is missing; install $* by hand"
  if [ -z "$APT_UPDATED" ]; then as_root apt-get update -qq; APT_UPDATED=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

ensure_rust() {
  command -v cargo >/dev/null || die "cargo is missing: install Rust 1.95 with rustup (https://rustup.rs)"
  command -v rustup >/dev/null || die "rustup is missing: the wasm32 target is installed with it"
  if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    step "adding the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown
  fi
  # What the build itself needs from the system: the font the invoice PDF embeds (server/build.rs).
  if [ -z "${PDF_FONT_DIR:-}" ] && [ ! -f /usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf ]; then
    step "installing the PDF font (fonts-dejavu-core)"
    apt_install fonts-dejavu-core
  fi
  # pdftotext and pdfinfo read the PDFs back in tests.
  if ! command -v pdftotext >/dev/null || ! command -v pdfinfo >/dev/null; then
    step "installing poppler-utils (pdftotext, for the PDF tests)"
    apt_install poppler-utils
  fi
  # zbarimg reads the payment QR codes back in tests (a decoder nobody here wrote).
  if ! command -v zbarimg >/dev/null; then
    step "installing zbar-tools (zbarimg, for the payment QR code tests)"
    apt_install zbar-tools
  fi
}

ensure_cargo_leptos() {
  if ! cargo leptos --version 2>/dev/null | grep -q '0\.3\.10'; then
    step "installing cargo-leptos 0.3.10 (once per machine, ~28 minutes on 2 cores)"
    # 0.3.11 pulls crates that need a newer rustc than 1.95.
    cargo install cargo-leptos --version 0.3.10 --locked
  fi
}

ensure_wasm_bindgen() {
  local want have
  want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' Cargo.lock)
  [ -n "$want" ] || die "cannot read the wasm-bindgen version from Cargo.lock"
  have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
  if [ "$want" != "$have" ]; then
    step "installing wasm-bindgen-cli $want (must match Cargo.lock; ~5 minutes)"
    # Not --locked: its lock file names a crate version the registry does not serve.
    cargo install wasm-bindgen-cli --version "$want" --force
  fi
}

# The machine's PostgreSQL 15 cluster, started if down, with a superuser role for this OS user.
ensure_postgres() {
  if ! command -v pg_ctlcluster >/dev/null; then
    step "installing PostgreSQL"
    apt_install postgresql
  fi
  if ! pg_lsclusters -h 2>/dev/null | grep -q .; then
    step "creating a PostgreSQL cluster"
    as_root pg_createcluster 15 main
  fi
  local version cluster status
  read -r version cluster _ status _ < <(pg_lsclusters -h | head -n1)
  if [ "$status" != online ]; then
    step "starting PostgreSQL $version/$cluster"
    as_root pg_ctlcluster "$version" "$cluster" start
  fi
  local me; me=$(id -un)
  if ! psql -h "$PGHOST_DIR" -d postgres -Atqc 'select 1' >/dev/null 2>&1; then
    step "creating the Postgres role $me"
    as_root su postgres -c "createuser -s $me" || die "cannot create the Postgres role $me"
  fi
}

# ensure_database NAME [fresh]: creates NAME if missing; with 'fresh', drops it first.
ensure_database() {
  local name=$1
  if [ "${2:-}" = fresh ]; then
    psql -h "$PGHOST_DIR" -d postgres -qc "drop database if exists \"$name\" with (force)" >/dev/null
  fi
  if ! psql -h "$PGHOST_DIR" -d postgres -Atqc "select 1 from pg_database where datname = '$name'" | grep -q 1; then
    createdb -h "$PGHOST_DIR" "$name"
  fi
}

database_url() { echo "postgres:///$1?host=$PGHOST_DIR"; }

ensure_chromium() {
  if [ ! -x /usr/bin/chromium ]; then
    step "installing Chromium (Debian package)"
    apt_install chromium
  fi
}

ensure_e2e_packages() {
  command -v npm >/dev/null || die "npm is missing: install Node.js 20"
  if [ ! -d end2end/node_modules/@playwright/test ] || [ ! -d end2end/node_modules/@axe-core/playwright ] \
    || [ ! -d end2end/node_modules/stripe ]; then
    step "installing the end-to-end test packages"
    # Playwright's own browser download cannot work here; Debian's chromium is used instead.
    (cd end2end && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)
  fi
}

# Python test tools from PyPI in a private virtualenv under target/: schemathesis (API contract test)
# and aiosmtpd (the real SMTP server the mail tests talk to).
SCHEMATHESIS_VERSION=4.32.5
AIOSMTPD_VERSION=1.4.6
# The EN 16931 rules (../shared/einvoicing/validate.py) run with saxonche; factur-x reads the XML in a PDF.
SAXONCHE_VERSION=13.1.1
FACTURX_VERSION=7.8
STANDARDWEBHOOKS_VERSION=1.3.0
ensure_python_tools() {
  local venv=$ROOT/target/venv-tools
  if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION" \
     || ! "$venv/bin/python" -c "import aiosmtpd, saxonche, facturx, standardwebhooks" 2>/dev/null; then
    step "installing schemathesis $SCHEMATHESIS_VERSION, aiosmtpd $AIOSMTPD_VERSION, saxonche $SAXONCHE_VERSION, factur-x $FACTURX_VERSION and standardwebhooks $STANDARDWEBHOOKS_VERSION (PyPI, into target/venv-tools)"
    command -v python3 >/dev/null || die "python3 is missing: install Python 3.11"
    python3 -m venv "$venv" || die "cannot create a Python virtualenv (apt-get install python3-venv)"
    "$venv/bin/pip" install -q "schemathesis==$SCHEMATHESIS_VERSION" "aiosmtpd==$AIOSMTPD_VERSION" \
      "saxonche==$SAXONCHE_VERSION" "factur-x==$FACTURX_VERSION" \
      "standardwebhooks==$STANDARDWEBHOOKS_VERSION"
  fi
  SCHEMATHESIS=$venv/bin/schemathesis
  # The mail tests start scripts/smtp_sink.py with this interpreter.
  export TEST_PYTHON=$venv/bin/python
}

# wait_until SECONDS WHAT COMMAND...: runs COMMAND every 0.1 s until it succeeds, or fails naming WHAT
# after SECONDS.
wait_until() {
  local secs=$1 deadline=$((SECONDS + $1)) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || die "$what did not happen within $secs s"
    sleep 0.1
  done
}

# stop_server PID NAME: the server must still be running (a server that died during its step failed
# it); then it is stopped.
stop_server() {
  kill -0 "$1" 2>/dev/null || die "$2 died during its step"
  kill "$1"
  wait "$1" 2>/dev/null || true
}

# wait_for URL SECONDS: polls until URL answers 2xx, or fails after SECONDS.
wait_for() {
  local url=$1 deadline=$((SECONDS + $2))
  until curl -fsS -o /dev/null "$url" 2>/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || die "$url did not answer within $2 s"
    sleep 0.2
  done
}

# Release builds run wasm-opt; cargo-leptos would download it (which fails offline), so the npm
# package binaryen (which ships one) goes into target/npm-tools and onto PATH.
BINARYEN_VERSION=123.0.0
ensure_wasm_opt() {
  local dir=$ROOT/target/npm-tools
  if ! "$dir/node_modules/.bin/wasm-opt" --version 2>/dev/null | grep -q "version ${BINARYEN_VERSION%%.*}"; then
    step "installing wasm-opt (npm binaryen $BINARYEN_VERSION, into target/npm-tools)"
    command -v npm >/dev/null || die "npm is missing: install Node.js 20"
    mkdir -p "$dir"
    npm install --no-audit --no-fund --prefix "$dir" "binaryen@$BINARYEN_VERSION" >/dev/null
  fi
  export PATH="$dir/node_modules/.bin:$PATH"
}
