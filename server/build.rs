//! Finds the fonts the invoice PDF embeds (DejaVu Sans, Debian's `fonts-dejavu-core`), so the binary
//! carries them and needs no font files where it runs. `PDF_FONT_DIR` points elsewhere.
//!
//! Names the build's PDF renderer (`INVOICER_RENDERER`): a digest of every source, locale and font
//! that can change how a document is drawn, and of the lock file. Stored PDFs are kept per version,
//! and the renderer is part of it: a new build draws each document once again.

use std::hash::{DefaultHasher, Hasher};
use std::path::{Path, PathBuf};

/// Feeds every file under `path` (in a fixed order: names sorted; each named relative to `root`)
/// into `hash`.
fn digest(root: &Path, path: &Path, hash: &mut DefaultHasher) {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .expect("a source folder")
            .map(|e| e.expect("a folder entry").path())
            .collect();
        entries.sort();
        for entry in entries {
            digest(root, &entry, hash);
        }
    } else if path.is_file() {
        let name = path.strip_prefix(root).unwrap_or(path);
        hash.write(name.to_string_lossy().as_bytes());
        hash.write(&std::fs::read(path).expect("a readable source"));
    }
}

fn main() {
    println!("cargo:rerun-if-env-changed=PDF_FONT_DIR");
    let dir = std::env::var_os("PDF_FONT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/share/fonts/truetype/dejavu"));
    for (var, file) in [
        ("INVOICER_PDF_FONT_REGULAR", "DejaVuSans.ttf"),
        ("INVOICER_PDF_FONT_BOLD", "DejaVuSans-Bold.ttf"),
    ] {
        let path = dir.join(file);
        if !path.is_file() {
            panic!(
                "{} is missing: install Debian's fonts-dejavu-core (scripts/lib.sh does) or set \
                 PDF_FONT_DIR to a folder holding {file}",
                path.display()
            );
        }
        println!("cargo:rerun-if-changed={}", path.display());
        println!("cargo:rustc-env={var}={}", path.display());
    }
    let mut hash = DefaultHasher::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for part in [
        "server/src",
        "server/core/src",
        "server/core/locales",
        "app/src",
        "model/src",
        "Cargo.lock",
    ] {
        let path = root.join(part);
        println!("cargo:rerun-if-changed={}", path.display());
        digest(&root, &path, &mut hash);
    }
    for file in ["DejaVuSans.ttf", "DejaVuSans-Bold.ttf"] {
        digest(&dir, &dir.join(file), &mut hash);
    }
    println!(
        "cargo:rustc-env=INVOICER_RENDERER={}-{:016x}",
        env!("CARGO_PKG_VERSION"),
        hash.finish()
    );
}
