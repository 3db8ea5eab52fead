//! The customer's language: messages from Project Fluent files (`server/core/locales/<lang>.ftl`, compiled
//! in), money, numbers and month names from the GNU C library's locale data (`pure-rust-locales`).
//!
//! A message missing in a language falls back to English, and one missing in English to the
//! English text its caller gave: a page never breaks for a word. The tests make sure none is
//! missing (every language has every English message, with the same arguments, and every message
//! the code names exists in English with the code's English text).

use std::sync::LazyLock;

use chrono::{Datelike, NaiveDate};
use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource};

use model::{currency_exponent, fill, format_money, Locale, Thousandths, Words};

/// Each language's messages file.
pub const SOURCES: [(Locale, &str); 5] = [
    (Locale::En, include_str!("../../locales/en.ftl")),
    (Locale::De, include_str!("../../locales/de.ftl")),
    (Locale::Fr, include_str!("../../locales/fr.ftl")),
    (Locale::Es, include_str!("../../locales/es.ftl")),
    (Locale::Nl, include_str!("../../locales/nl.ftl")),
];

fn bundle(locale: Locale, source: &str) -> FluentBundle<FluentResource> {
    let language: unic_langid::LanguageIdentifier = locale.as_str().parse().expect("a language id");
    let mut bundle = FluentBundle::new_concurrent(vec![language]);
    // No Unicode isolation marks around arguments: plain text in PDFs, emails and tests.
    bundle.set_use_isolating(false);
    let resource =
        FluentResource::try_new(source.to_owned()).unwrap_or_else(|(resource, errors)| {
            tracing::error!(
                locale = locale.as_str(),
                ?errors,
                "messages file has errors"
            );
            resource
        });
    if let Err(errors) = bundle.add_resource(resource) {
        tracing::error!(
            locale = locale.as_str(),
            ?errors,
            "messages file has duplicates"
        );
    }
    bundle
}

static BUNDLES: LazyLock<Vec<(Locale, FluentBundle<FluentResource>)>> = LazyLock::new(|| {
    SOURCES
        .iter()
        .map(|(locale, source)| (*locale, bundle(*locale, source)))
        .collect()
});

fn bundle_of(locale: Locale) -> &'static FluentBundle<FluentResource> {
    &BUNDLES
        .iter()
        .find(|(l, _)| *l == locale)
        .expect("every locale has a bundle")
        .1
}

/// Money as a language writes it: separators and where the symbol goes.
struct MoneyStyle {
    decimal: &'static str,
    group: &'static str,
    symbol_first: bool,
    space: bool,
}

fn money_style(locale: Locale) -> MoneyStyle {
    use pure_rust_locales as l;
    macro_rules! style {
        ($m:ident) => {
            MoneyStyle {
                decimal: l::$m::LC_MONETARY::MON_DECIMAL_POINT,
                group: l::$m::LC_MONETARY::MON_THOUSANDS_SEP,
                symbol_first: l::$m::LC_MONETARY::P_CS_PRECEDES == 1,
                space: l::$m::LC_MONETARY::P_SEP_BY_SPACE == 1,
            }
        };
    }
    match locale {
        Locale::En => style!(en_US),
        Locale::De => style!(de_DE),
        Locale::Fr => style!(fr_FR),
        Locale::Es => style!(es_ES),
        Locale::Nl => style!(nl_NL),
    }
}

fn month_names(locale: Locale) -> &'static [&'static str] {
    use pure_rust_locales as l;
    match locale {
        Locale::En => l::en_US::LC_TIME::MON,
        Locale::De => l::de_DE::LC_TIME::MON,
        Locale::Fr => l::fr_FR::LC_TIME::MON,
        Locale::Es => l::es_ES::LC_TIME::MON,
        Locale::Nl => l::nl_NL::LC_TIME::MON,
    }
}

/// Digits of `whole` with `group` between each three.
fn grouped(whole: u64, group: &str) -> String {
    let digits = whole.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push_str(group);
        }
        out.push(ch);
    }
    out
}

fn symbol(currency: &str) -> String {
    match currency {
        "usd" => "$".into(),
        "eur" => "€".into(),
        "gbp" => "£".into(),
        "jpy" => "¥".into(),
        other => other.to_ascii_uppercase(),
    }
}

/// The language of `org`'s documents for `customer`: the customer's own, else the org's.
pub async fn locale_for(
    conn: &mut sqlx::PgConnection,
    org: model::OrgId,
    customer: Option<uuid::Uuid>,
) -> sqlx::Result<Locale> {
    // language=PostgreSQL
    let code = sqlx::query_scalar!(
        r#"
        select coalesce((select locale from customers where id = $2 and org_id = $1), locale) as "locale!"
        from orgs where id = $1
        "#,
        org as _,
        customer as _
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok(code.and_then(|c| Locale::parse(&c)).unwrap_or_default())
}

/// The language of invoice `invoice`'s documents (and its credit notes').
pub async fn locale_of_invoice(
    conn: &mut sqlx::PgConnection,
    invoice: uuid::Uuid,
) -> sqlx::Result<Locale> {
    // language=PostgreSQL
    let code = sqlx::query_scalar!(
        r#"
        select coalesce(cu.locale, o.locale) as "locale!"
        from invoices i join orgs o on o.id = i.org_id
        left join customers cu on cu.id = i.customer_id
        where i.id = $1
        "#,
        invoice as _
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok(code.and_then(|c| Locale::parse(&c)).unwrap_or_default())
}

/// The words and formats of one language.
#[derive(Debug, Clone, Copy)]
pub struct Tr {
    pub locale: Locale,
}

impl Tr {
    pub fn new(locale: Locale) -> Tr {
        Tr { locale }
    }

    /// Message `id` in this language, else in English; None when neither has it.
    fn format(&self, id: &str, args: &[(&str, &str)]) -> Option<String> {
        let mut fluent_args = FluentArgs::new();
        for (name, value) in args {
            fluent_args.set(*name, *value);
        }
        let args = (!args.is_empty()).then_some(&fluent_args);
        for locale in [self.locale, Locale::En] {
            let bundle = bundle_of(locale);
            if let Some(pattern) = bundle.get_message(id).and_then(|m| m.value()) {
                let mut errors = Vec::new();
                let text = bundle.format_pattern(pattern, args, &mut errors);
                if errors.is_empty() {
                    return Some(text.into_owned());
                }
                tracing::error!(
                    id,
                    locale = locale.as_str(),
                    ?errors,
                    "message failed to format"
                );
            } else if locale != Locale::En {
                tracing::error!(
                    id,
                    locale = locale.as_str(),
                    "message missing: English used"
                );
            }
        }
        None
    }

    /// `date` in the language's short numeric form (`05.12.2026`), for table cells; English keeps
    /// `2026-12-05`.
    pub fn short_date(&self, date: NaiveDate) -> String {
        use pure_rust_locales as l;
        let format = match self.locale {
            Locale::En => return date.to_string(),
            Locale::De => l::de_DE::LC_TIME::D_FMT,
            Locale::Fr => l::fr_FR::LC_TIME::D_FMT,
            Locale::Es => l::es_ES::LC_TIME::D_FMT,
            Locale::Nl => l::nl_NL::LC_TIME::D_FMT,
        };
        date.format(format).to_string()
    }

    /// Message `id` (whose English text is in `en.ftl`).
    pub fn t(&self, id: &str) -> String {
        self.t_args(id, &[])
    }

    /// Message `id` with its arguments.
    pub fn t_args(&self, id: &str, args: &[(&str, &str)]) -> String {
        self.format(id, args).unwrap_or_else(|| {
            tracing::error!(id, "message missing in English");
            id.to_owned()
        })
    }
}

impl Words for Tr {
    fn phrase(&self, id: &str, english: &str, args: &[(&str, &str)]) -> String {
        self.format(id, args).unwrap_or_else(|| {
            tracing::error!(id, "message missing in English: the caller's text used");
            fill(english, args)
        })
    }

    fn money(&self, minor: i64, currency: &str) -> String {
        if self.locale == Locale::En {
            return format_money(minor, currency);
        }
        let style = money_style(self.locale);
        let exponent = currency_exponent(currency).unwrap_or(2);
        let scale = 10_u64.pow(exponent);
        let amount = minor.unsigned_abs();
        let mut number = grouped(amount / scale, style.group);
        if exponent > 0 {
            number.push_str(style.decimal);
            number.push_str(&format!(
                "{:0width$}",
                amount % scale,
                width = exponent as usize
            ));
        }
        let sign = if minor < 0 { "-" } else { "" };
        let symbol = symbol(currency);
        let gap = if style.space { " " } else { "" };
        if style.symbol_first {
            format!("{symbol}{gap}{sign}{number}")
        } else {
            format!("{sign}{number}{gap}{symbol}")
        }
    }

    fn number(&self, value: Thousandths) -> String {
        let text = value.to_string();
        if self.locale == Locale::En {
            return text;
        }
        let style = money_style(self.locale);
        let (sign, text) = match text.strip_prefix('-') {
            Some(rest) => ("-", rest),
            None => ("", text.as_str()),
        };
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        let whole = whole
            .parse::<u64>()
            .map_or(whole.to_owned(), |w| grouped(w, style.group));
        if fraction.is_empty() {
            format!("{sign}{whole}")
        } else {
            format!("{sign}{whole}{}{fraction}", style.decimal)
        }
    }

    fn date(&self, date: NaiveDate) -> String {
        if self.locale == Locale::En {
            return date.to_string();
        }
        let month = month_names(self.locale)[date.month0() as usize];
        self.t_args(
            "date-long",
            &[
                ("day", &date.day().to_string()),
                ("month", month),
                ("year", &date.year().to_string()),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;

    /// Each message of a file as `id → its text` (continuation lines joined).
    fn messages(source: &str) -> BTreeMap<String, String> {
        let mut out: BTreeMap<String, String> = BTreeMap::new();
        let mut current: Option<String> = None;
        for line in source.lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                if line.trim().is_empty() {
                    continue;
                }
                current = None;
                continue;
            }
            if line.starts_with(char::is_whitespace) {
                if let Some(id) = &current {
                    let text = out.get_mut(id).expect("current message");
                    text.push('\n');
                    text.push_str(line.trim());
                }
                continue;
            }
            let (id, text) = line.split_once(" = ").expect("id = text");
            assert!(
                out.insert(id.to_owned(), text.to_owned()).is_none(),
                "{id} twice"
            );
            current = Some(id.to_owned());
        }
        out
    }

    /// The `$names` a message's text uses.
    fn variables(text: &str) -> BTreeSet<String> {
        text.split("{ $")
            .skip(1)
            .map(|rest| rest.split(' ').next().unwrap_or_default().to_owned())
            .collect()
    }

    #[test]
    fn every_file_parses_and_every_language_has_every_english_message_with_its_arguments() {
        for (locale, source) in SOURCES {
            assert!(
                FluentResource::try_new(source.to_owned()).is_ok(),
                "{} does not parse",
                locale.as_str()
            );
        }
        let english = messages(SOURCES[0].1);
        assert!(english.len() > 50);
        for (locale, source) in &SOURCES[1..] {
            let other = messages(source);
            let (want, have): (BTreeSet<_>, BTreeSet<_>) =
                (english.keys().collect(), other.keys().collect());
            assert_eq!(
                want.difference(&have).collect::<Vec<_>>(),
                Vec::<&&String>::new(),
                "missing in {}",
                locale.as_str()
            );
            assert_eq!(
                have.difference(&want).collect::<Vec<_>>(),
                Vec::<&&String>::new(),
                "not in English, in {}",
                locale.as_str()
            );
            for (id, text) in &english {
                assert_eq!(
                    variables(text),
                    variables(&other[id]),
                    "{id}: the arguments of {}",
                    locale.as_str()
                );
            }
        }
    }

    /// The string literal at the start of `text` (after spaces), and what follows it.
    fn literal(text: &str) -> Option<(String, &str)> {
        let text = text.trim_start();
        let rest = text.strip_prefix('"')?;
        let mut out = String::new();
        let mut chars = rest.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => return Some((out, &rest[i + 1..])),
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        out.push(match escaped {
                            'n' => '\n',
                            other => other,
                        });
                    }
                }
                c => out.push(c),
            }
        }
        None
    }

    /// Every `(id, English text)` the code names: `t("id")`, `t_args("id", ..)` (no English) and
    /// `label("id", "English")`, `phrase("id", "English", ..)`.
    fn named_in(dir: &std::path::Path, out: &mut Vec<(String, Option<String>, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                named_in(&path, out);
                continue;
            }
            // This file names calls in its own tests.
            if path.extension().is_none_or(|e| e != "rs")
                || path.ends_with("core/src/documents/i18n.rs")
            {
                continue;
            }
            let source = std::fs::read_to_string(&path).unwrap();
            // Ids chosen by a `match` before the call names them.
            for prefix in ["\"state-", "\"mail-reminder-subject-", "\"col-", "\"pdf-"] {
                for (at, _) in source.match_indices(prefix) {
                    if let Some((id, _)) = literal(&source[at..]) {
                        out.push((id, None, path.display().to_string()));
                    }
                }
            }
            for call in [".t(", ".t_args(", "label(", "phrase("] {
                for (at, _) in source.match_indices(call) {
                    let after = &source[at + call.len()..];
                    let Some((id, rest)) = literal(after) else {
                        continue;
                    };
                    let is_id = id.starts_with(|c: char| c.is_ascii_lowercase())
                        && id
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
                    if !is_id {
                        continue;
                    }
                    let english = if call.starts_with('.') {
                        None
                    } else {
                        rest.trim_start()
                            .strip_prefix(',')
                            .and_then(literal)
                            .map(|(e, _)| e)
                    };
                    out.push((id, english, path.display().to_string()));
                }
            }
        }
    }

    #[test]
    fn every_message_the_code_names_is_in_english_with_the_codes_english_text() {
        let english = messages(SOURCES[0].1);
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut named = Vec::new();
        for dir in ["src", "../src", "../../app/src"] {
            named_in(&root.join(dir), &mut named);
        }
        assert!(
            named.len() > 40,
            "the scan finds the calls: {}",
            named.len()
        );
        for (id, text, file) in named {
            let found = english
                .get(&id)
                .unwrap_or_else(|| panic!("{id} (named in {file}) is not in en.ftl"));
            if let Some(text) = text {
                let ours: String = found.split_whitespace().collect::<Vec<_>>().join(" ");
                let theirs: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
                assert_eq!(ours, theirs, "{id}: en.ftl and {file} say different things");
            }
        }
    }

    #[test]
    fn money_numbers_and_dates_follow_the_language() {
        let money = |l: Locale, minor: i64, c: &str| Tr::new(l).money(minor, c);
        assert_eq!(money(Locale::De, 123_456, "eur"), "1.234,56 €");
        assert_eq!(money(Locale::Es, 123_456, "eur"), "1.234,56 €");
        assert_eq!(money(Locale::Fr, 123_456, "eur"), "1\u{202f}234,56 €");
        assert_eq!(money(Locale::Nl, 123_456, "eur"), "€ 1.234,56");
        assert_eq!(money(Locale::En, 123_456, "eur"), "€1,234.56");
        assert_eq!(money(Locale::De, -500, "usd"), "-5,00 $");
        assert_eq!(money(Locale::De, 1_234_567, "jpy"), "1.234.567 ¥");
        assert_eq!(money(Locale::De, 12_345, "chf"), "123,45 CHF");
        let number = |l: Locale, milli: i64| Tr::new(l).number(Thousandths(milli));
        assert_eq!(number(Locale::De, 1_500), "1,5");
        assert_eq!(number(Locale::De, 1_234_000), "1.234");
        assert_eq!(number(Locale::En, 1_500), "1.5");
        let date = NaiveDate::from_ymd_opt(2026, 12, 5).unwrap();
        assert_eq!(Tr::new(Locale::De).date(date), "5. Dezember 2026");
        assert_eq!(Tr::new(Locale::Fr).date(date), "5 décembre 2026");
        assert_eq!(Tr::new(Locale::Es).date(date), "5 de diciembre de 2026");
        assert_eq!(Tr::new(Locale::Nl).date(date), "5 december 2026");
        assert_eq!(Tr::new(Locale::En).date(date), "2026-12-05");
        assert_eq!(Tr::new(Locale::De).short_date(date), "05.12.2026");
        assert_eq!(Tr::new(Locale::En).short_date(date), "2026-12-05");
    }

    #[test]
    fn a_missing_message_falls_back_and_never_breaks_the_text() {
        let tr = Tr::new(Locale::De);
        assert_eq!(tr.t("subtotal"), "Zwischensumme");
        assert_eq!(
            tr.phrase("no-such-message", "Hello { $name }", &[("name", "Ada")]),
            "Hello Ada"
        );
        assert_eq!(tr.t("no-such-message"), "no-such-message");
        assert_eq!(
            tr.t_args("status-due", &[("due", "5. Dezember 2026")]),
            "Fällig am 5. Dezember 2026"
        );
    }
}
