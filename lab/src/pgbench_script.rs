//! The pgbench scripts as pgbench reads them. A statement several scripts send lives once in
//! `bench/pgbench/parts/`; a script names it on a line of its own, `-- include: parts/<name>.sql`
//! (a part may be a whole statement, several, or the shared head or tail of one whose filter the
//! script writes), and [`expand`] puts the part's text in that line's place, so pgbench, its
//! per-statement report and the statement-drift test all see the statements whole. A part may name
//! what differs between its users as `{name}`; the include line gives each its text,
//! `-- include: parts/<name>.sql ids=array[:invoice::uuid] org=:org::uuid` (no spaces in a value).

use anyhow::Context;

/// The line that includes a part.
const INCLUDE: &str = "-- include:";

/// Every part, built in like the scripts themselves.
const PARTS: &[(&str, &str)] = &[
    (
        "parts/activity_counts.sql",
        include_str!("../../bench/pgbench/parts/activity_counts.sql"),
    ),
    (
        "parts/activity_page.sql",
        include_str!("../../bench/pgbench/parts/activity_page.sql"),
    ),
    (
        "parts/bank_import_head.sql",
        include_str!("../../bench/pgbench/parts/bank_import_head.sql"),
    ),
    (
        "parts/claim_done.sql",
        include_str!("../../bench/pgbench/parts/claim_done.sql"),
    ),
    (
        "parts/form_create_tx.sql",
        include_str!("../../bench/pgbench/parts/form_create_tx.sql"),
    ),
    (
        "parts/invoice_columns.sql",
        include_str!("../../bench/pgbench/parts/invoice_columns.sql"),
    ),
    (
        "parts/invoice_insert_head.sql",
        include_str!("../../bench/pgbench/parts/invoice_insert_head.sql"),
    ),
    (
        "parts/invoice_insert_tail.sql",
        include_str!("../../bench/pgbench/parts/invoice_insert_tail.sql"),
    ),
    (
        "parts/invoices_by_ids.sql",
        include_str!("../../bench/pgbench/parts/invoices_by_ids.sql"),
    ),
    (
        "parts/list_search.sql",
        include_str!("../../bench/pgbench/parts/list_search.sql"),
    ),
    (
        "parts/public_open.sql",
        include_str!("../../bench/pgbench/parts/public_open.sql"),
    ),
    (
        "parts/session.sql",
        include_str!("../../bench/pgbench/parts/session.sql"),
    ),
];

/// `script` with each include line replaced by its part (parts may include parts). Fails on a part
/// that does not exist and on a part that includes itself, directly or not.
pub fn expand(script: &str) -> anyhow::Result<String> {
    expand_with(script, &|name| {
        PARTS
            .iter()
            .find(|(part, _)| *part == name)
            .map(|(_, text)| *text)
    })
}

fn expand_with<'a>(script: &str, part: &dyn Fn(&str) -> Option<&'a str>) -> anyhow::Result<String> {
    fn go<'a>(
        text: &str,
        part: &dyn Fn(&str) -> Option<&'a str>,
        stack: &mut Vec<String>,
        out: &mut String,
    ) -> anyhow::Result<()> {
        for line in text.split_inclusive('\n') {
            let Some(include) = line.trim().strip_prefix(INCLUDE) else {
                out.push_str(line);
                continue;
            };
            let mut words = include.split_whitespace();
            let name = words.next().unwrap_or_default();
            anyhow::ensure!(
                !stack.iter().any(|s| s == name),
                "include cycle: {} -> {name}",
                stack.join(" -> ")
            );
            let mut body = part(name)
                .with_context(|| {
                    format!("no pgbench part {name:?} (bench/pgbench/parts, listed in lab/src/pgbench_script.rs)")
                })?
                .to_owned();
            for word in words {
                let (key, value) = word
                    .split_once('=')
                    .with_context(|| format!("{name}: {word:?} is not name=text"))?;
                let slot = format!("{{{key}}}");
                anyhow::ensure!(body.contains(&slot), "{name} has no {slot}");
                body = body.replace(&slot, value);
            }
            if let Some(open) = unfilled(&body) {
                anyhow::bail!("{name}: {open} is not given on the include line");
            }
            let body = body.as_str();
            stack.push(name.to_owned());
            go(body, part, stack, out)?;
            stack.pop();
            if !out.ends_with('\n') {
                out.push('\n');
            }
        }
        Ok(())
    }
    let mut out = String::with_capacity(script.len());
    go(script, part, &mut Vec::new(), &mut out)?;
    Ok(out)
}

/// The first `{name}` slot of `text` (a lower-case name: JSON's `{"` never is one).
fn unfilled(text: &str) -> Option<&str> {
    text.match_indices('{').find_map(|(at, _)| {
        let rest = &text[at + 1..];
        let end = rest.find('}')?;
        let name = &rest[..end];
        (!name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
            .then(|| &text[at..at + end + 2])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts<'a>(table: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> {
        move |name| table.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
    }

    #[test]
    fn an_include_line_becomes_its_part_nested_parts_too() {
        let table = [
            ("parts/a.sql", "select 1\n-- include: parts/b.sql\n"),
            ("parts/b.sql", "from t;"),
        ];
        let out = expand_with(
            "\\set r 1\n  -- include: parts/a.sql\nselect 2;\n",
            &parts(&table),
        )
        .unwrap();
        assert_eq!(out, "\\set r 1\nselect 1\nfrom t;\nselect 2;\n");
    }

    #[test]
    fn an_include_fills_the_parts_slots_and_refuses_a_slot_left_open() {
        let table = [("parts/a.sql", "select {what} from t where id = {id};")];
        let out = expand_with(
            "-- include: parts/a.sql what=count(*) id=:id::uuid\n",
            &parts(&table),
        )
        .unwrap();
        assert_eq!(out, "select count(*) from t where id = :id::uuid;\n");
        let err = expand_with("-- include: parts/a.sql what=1\n", &parts(&table)).unwrap_err();
        assert!(err.to_string().contains("{id}"), "{err}");
        let err = expand_with(
            "-- include: parts/a.sql what=1 id=2 nope=3\n",
            &parts(&table),
        )
        .unwrap_err();
        assert!(err.to_string().contains("{nope}"), "{err}");
    }

    #[test]
    fn a_missing_part_fails() {
        let err = expand_with("-- include: parts/nope.sql\n", &parts(&[])).unwrap_err();
        assert!(err.to_string().contains("parts/nope.sql"), "{err}");
    }

    #[test]
    fn a_cycle_fails() {
        let table = [
            ("parts/a.sql", "-- include: parts/b.sql\n"),
            ("parts/b.sql", "-- include: parts/a.sql\n"),
        ];
        let err = expand_with("-- include: parts/a.sql\n", &parts(&table)).unwrap_err();
        assert!(err.to_string().contains("cycle"), "{err}");
    }

    /// Every file in bench/pgbench/parts is built in, and every script expands.
    #[test]
    fn every_part_is_listed_and_every_script_expands() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/pgbench");
        for entry in std::fs::read_dir(dir.join("parts")).unwrap() {
            let name = format!("parts/{}", entry.unwrap().file_name().to_string_lossy());
            assert!(
                PARTS.iter().any(|(n, _)| *n == name),
                "{name} is not in PARTS"
            );
        }
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "sql") {
                let text = expand(&std::fs::read_to_string(&path).unwrap())
                    .unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
                assert!(!text.contains(INCLUDE), "{}", path.display());
            }
        }
    }
}
