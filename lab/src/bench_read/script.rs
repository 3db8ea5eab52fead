//! pgbench scripts as text: their statements, and their `:name` variables replaced by literals or
//! by parameters.

use std::collections::HashMap;

/// A pgbench script's statements, each with its `\gset` prefix when it has one.
pub(super) fn statements(script: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in script.lines() {
        let trimmed = line.trim();
        if current.is_empty()
            && (trimmed.is_empty() || trimmed.starts_with("--") || trimmed.starts_with('\\'))
        {
            continue;
        }
        if let Some((before, after)) = line.split_once("\\gset") {
            current.push_str(before);
            out.push((std::mem::take(&mut current), Some(after.trim().to_owned())));
        } else if trimmed.ends_with(';') {
            current.push_str(&line[..line.rfind(';').unwrap_or(line.len())]);
            out.push((std::mem::take(&mut current), None));
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    out
}

/// `:name` (not `::type`) replaced by `values[name]` as a quoted literal; unknown names are kept.
pub(super) fn substitute(sql: &str, values: &HashMap<String, String>) -> String {
    let (out, _) = rewrite_vars(sql, values, false);
    out
}

/// `:name` replaced by `$n` (one per name, in order of first use), with the quoted literals to
/// `EXECUTE` it with: the statement as a prepared statement receives it.
pub(super) fn parameterize(sql: &str, values: &HashMap<String, String>) -> (String, Vec<String>) {
    rewrite_vars(sql, values, true)
}

fn rewrite_vars(
    sql: &str,
    values: &HashMap<String, String>,
    as_params: bool,
) -> (String, Vec<String>) {
    let bytes = sql.as_bytes();
    let name_char = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let (mut out, mut copied, mut i) = (String::with_capacity(sql.len()), 0, 0);
    let mut names: Vec<&str> = Vec::new();
    let mut literals = Vec::new();
    while i < bytes.len() {
        let is_var = bytes[i] == b':'
            && (i == 0 || bytes[i - 1] != b':')
            && bytes
                .get(i + 1)
                .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_');
        if is_var {
            let end = (i + 1..bytes.len())
                .find(|&j| !name_char(bytes[j]))
                .unwrap_or(bytes.len());
            let name = &sql[i + 1..end];
            if let Some(value) = values.get(name) {
                let literal = format!("'{}'", value.replace('\'', "''"));
                out.push_str(&sql[copied..i]);
                if as_params {
                    let n = match names.iter().position(|known| *known == name) {
                        Some(n) => n,
                        None => {
                            names.push(name);
                            literals.push(literal);
                            names.len() - 1
                        }
                    };
                    out.push_str(&format!("${}", n + 1));
                } else {
                    out.push_str(&literal);
                }
                copied = end;
            }
            i = end;
            continue;
        }
        i += 1;
    }
    out.push_str(&sql[copied..]);
    (out, literals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_statement_becomes_a_prepared_statement_with_its_literals() {
        let values: HashMap<String, String> = [("org", "o'1"), ("ids", "{a,b}")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let sql = "select 1 from t where org = :org::uuid and id = any(:ids::uuid[]) \
                   and again = :org and :unknown";
        let (text, literals) = parameterize(sql, &values);
        assert_eq!(
            text,
            "select 1 from t where org = $1::uuid and id = any($2::uuid[]) \
             and again = $1 and :unknown"
        );
        assert_eq!(literals, ["'o''1'", "'{a,b}'"]);
        assert_eq!(
            substitute(sql, &values),
            "select 1 from t where org = 'o''1'::uuid and id = any('{a,b}'::uuid[]) \
             and again = 'o''1' and :unknown"
        );
    }
}
