//! Embeds every file under `guidebook/` into the binary as the default guidebook, so that
//! `guidebook serve` on a fresh machine has something to serve. Reads: `guidebook/`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.join("guidebook");
    println!("cargo:rerun-if-changed=guidebook");
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    let mut out = String::from("/// Every file of the sample guidebook: path relative to the root, and content.\npub const SAMPLE_FILES: &[(&str, &str)] = &[\n");
    for f in files {
        let rel = f
            .strip_prefix(&root)
            .unwrap()
            .to_str()
            .unwrap()
            .replace('\\', "/");
        writeln!(
            out,
            "    ({rel:?}, include_str!({:?})),",
            f.to_str().unwrap()
        )
        .unwrap();
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("sample_guidebook.rs");
    std::fs::write(dest, out).unwrap();
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        {
            continue;
        }
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}
