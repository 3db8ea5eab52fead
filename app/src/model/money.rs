//! Money: amounts in minor units, currencies and their exponents, parsing and formatting.

/// `"12.5"` in usd → 1250. Refuses negatives, more decimals than the currency has, and junk.
pub fn parse_amount(text: &str, currency: &str) -> Result<i64, String> {
    let text = text.trim().replace(',', "");
    let exponent = currency_exponent(currency).unwrap_or(2);
    if text.starts_with('-') {
        return Err("The amount can't be negative.".into());
    }
    let (whole, fraction) = match text.split_once('.') {
        Some((w, f)) => (w, f),
        None => (text.as_str(), ""),
    };
    let digits_only = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !digits_only(whole) || !digits_only(fraction) {
        return Err("Enter an amount such as 12.50.".into());
    }
    if fraction.len() > exponent as usize {
        return Err(format!("Use at most {exponent} decimal places."));
    }
    if whole.len() > 12 {
        return Err("Enter an amount from 0 to 1,000,000.00.".into());
    }
    let whole: i64 = if whole.is_empty() {
        0
    } else {
        whole
            .parse()
            .map_err(|_| "Enter an amount such as 12.50.")?
    };
    let mut cents = whole * 10_i64.pow(exponent);
    if !fraction.is_empty() {
        let padded = format!("{fraction:0<width$}", width = exponent as usize);
        cents += padded
            .parse::<i64>()
            .map_err(|_| "Enter an amount such as 12.50.")?;
    }
    Ok(cents)
}

/// Minor-unit exponent of the ISO 4217 currencies we accept (lower case), or None if unknown.
pub fn currency_exponent(code: &str) -> Option<u32> {
    const ZERO: &[&str] = &[
        "bif", "clp", "djf", "gnf", "isk", "jpy", "kmf", "krw", "pyg", "rwf", "ugx", "uyi", "vnd",
        "vuv", "xaf", "xof", "xpf",
    ];
    const THREE: &[&str] = &["bhd", "iqd", "jod", "kwd", "lyd", "omr", "tnd"];
    const TWO: &[&str] = &[
        "aed", "afn", "all", "amd", "ang", "aoa", "ars", "aud", "awg", "azn", "bam", "bbd", "bdt",
        "bgn", "bmd", "bnd", "bob", "brl", "bsd", "btn", "bwp", "byn", "bzd", "cad", "cdf", "chf",
        "cny", "cop", "crc", "cup", "cve", "czk", "dkk", "dop", "dzd", "egp", "ern", "etb", "eur",
        "fjd", "fkp", "gbp", "gel", "ghs", "gip", "gmd", "gtq", "gyd", "hkd", "hnl", "htg", "huf",
        "idr", "ils", "inr", "irr", "jmd", "kes", "kgs", "khr", "kpw", "kyd", "kzt", "lak", "lbp",
        "lkr", "lrd", "lsl", "mad", "mdl", "mga", "mkd", "mmk", "mnt", "mop", "mru", "mur", "mvr",
        "mwk", "mxn", "myr", "mzn", "nad", "ngn", "nio", "nok", "npr", "nzd", "pab", "pen", "pgk",
        "php", "pkr", "pln", "qar", "ron", "rsd", "rub", "sar", "sbd", "scr", "sdg", "sek", "sgd",
        "shp", "sle", "sos", "srd", "ssp", "stn", "svc", "syp", "szl", "thb", "tjs", "tmt", "top",
        "try", "ttd", "twd", "tzs", "uah", "usd", "uyu", "uzs", "ves", "wst", "xcd", "yer", "zar",
        "zmw", "zwl",
    ];
    if TWO.contains(&code) {
        Some(2)
    } else if ZERO.contains(&code) {
        Some(0)
    } else if THREE.contains(&code) {
        Some(3)
    } else {
        None
    }
}

/// Currencies offered first in the form's picker.
pub const COMMON_CURRENCIES: &[&str] = &["usd", "eur", "gbp", "cad", "aud", "chf", "jpy", "sek"];

/// `1234567, "usd"` → `$12,345.67`; unknown symbols print the code: `12,345.67 CHF`.
pub fn format_money(minor: i64, currency: &str) -> String {
    let exponent = currency_exponent(currency).unwrap_or(2);
    let negative = minor < 0;
    let minor = minor.unsigned_abs();
    let scale = 10_u64.pow(exponent);
    let whole = (minor / scale).to_string();
    let mut grouped = String::new();
    for (i, ch) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    let number = if exponent == 0 {
        grouped
    } else {
        format!(
            "{grouped}.{:0width$}",
            minor % scale,
            width = exponent as usize
        )
    };
    let sign = if negative { "-" } else { "" };
    match currency {
        "usd" => format!("{sign}${number}"),
        "eur" => format!("{sign}€{number}"),
        "gbp" => format!("{sign}£{number}"),
        "jpy" => format!("{sign}¥{number}"),
        other => format!("{sign}{number} {}", other.to_ascii_uppercase()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_follow_the_currency() {
        assert_eq!(parse_amount("12", "usd"), Ok(1200));
        assert_eq!(parse_amount("1,000.5", "usd"), Ok(100_050));
        assert_eq!(parse_amount(".5", "eur"), Ok(50));
        assert_eq!(parse_amount("500", "jpy"), Ok(500));
        assert!(parse_amount("5.5", "jpy").is_err());
        assert_eq!(parse_amount("1.234", "kwd"), Ok(1234));
        assert!(parse_amount("1.234", "usd").is_err());
        assert!(parse_amount("abc", "usd").is_err());
        assert!(parse_amount("", "usd").is_err());
        assert!(parse_amount("-3", "usd").is_err());
    }

    #[test]
    fn money_is_formatted_per_currency() {
        assert_eq!(format_money(123_456_789, "usd"), "$1,234,567.89");
        assert_eq!(format_money(5, "eur"), "€0.05");
        assert_eq!(format_money(1000, "jpy"), "¥1,000");
        assert_eq!(format_money(1234, "kwd"), "1.234 KWD");
        assert_eq!(format_money(0, "chf"), "0.00 CHF");
    }
}
