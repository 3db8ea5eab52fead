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

/// A currency as Stripe charges it. Amounts in invoicer are integers of the currency's *shown* minor
/// unit (`decimals`: cents for usd, whole yen, whole krónur); Stripe's API may count in another unit
/// (`stripe_decimals`: ISK travels as hundredths) and may only take multiples of `step` of ours
/// (the three-decimal dinars must end in 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Currency {
    pub code: &'static str,
    pub decimals: u32,
    pub stripe_decimals: u32,
    pub step: i64,
}

const fn c(code: &'static str, decimals: u32, stripe_decimals: u32, step: i64) -> Currency {
    Currency {
        code,
        decimals,
        stripe_decimals,
        step,
    }
}

/// Stripe's presentment currencies (lower case, as its API takes them). Zero-decimal in Stripe's API:
/// bif clp djf gnf jpy kmf krw mga pyg rwf ugx vnd vuv xaf xof xpf. Special cases: isk is shown and
/// charged in whole krónur but sent in hundredths; bhd jod kwd omr tnd have three decimals whose last
/// digit must be 0.
#[rustfmt::skip]
pub const CURRENCIES: &[Currency] = &[
    c("aed", 2, 2, 1), c("afn", 2, 2, 1), c("all", 2, 2, 1), c("amd", 2, 2, 1),
    c("ang", 2, 2, 1), c("aoa", 2, 2, 1), c("ars", 2, 2, 1), c("aud", 2, 2, 1),
    c("awg", 2, 2, 1), c("azn", 2, 2, 1), c("bam", 2, 2, 1), c("bbd", 2, 2, 1),
    c("bdt", 2, 2, 1), c("bgn", 2, 2, 1), c("bhd", 3, 3, 10), c("bif", 0, 0, 1),
    c("bmd", 2, 2, 1), c("bnd", 2, 2, 1), c("bob", 2, 2, 1), c("brl", 2, 2, 1),
    c("bsd", 2, 2, 1), c("bwp", 2, 2, 1), c("byn", 2, 2, 1), c("bzd", 2, 2, 1),
    c("cad", 2, 2, 1), c("cdf", 2, 2, 1), c("chf", 2, 2, 1), c("clp", 0, 0, 1),
    c("cny", 2, 2, 1), c("cop", 2, 2, 1), c("crc", 2, 2, 1), c("cve", 2, 2, 1),
    c("czk", 2, 2, 1), c("djf", 0, 0, 1), c("dkk", 2, 2, 1), c("dop", 2, 2, 1),
    c("dzd", 2, 2, 1), c("egp", 2, 2, 1), c("etb", 2, 2, 1), c("eur", 2, 2, 1),
    c("fjd", 2, 2, 1), c("fkp", 2, 2, 1), c("gbp", 2, 2, 1), c("gel", 2, 2, 1),
    c("gip", 2, 2, 1), c("gmd", 2, 2, 1), c("gnf", 0, 0, 1), c("gtq", 2, 2, 1),
    c("gyd", 2, 2, 1), c("hkd", 2, 2, 1), c("hnl", 2, 2, 1), c("htg", 2, 2, 1),
    c("huf", 2, 2, 1), c("idr", 2, 2, 1), c("ils", 2, 2, 1), c("inr", 2, 2, 1),
    c("isk", 0, 2, 1), c("jmd", 2, 2, 1), c("jod", 3, 3, 10), c("jpy", 0, 0, 1),
    c("kes", 2, 2, 1), c("kgs", 2, 2, 1), c("khr", 2, 2, 1), c("kmf", 0, 0, 1),
    c("krw", 0, 0, 1), c("kwd", 3, 3, 10), c("kyd", 2, 2, 1), c("kzt", 2, 2, 1),
    c("lak", 2, 2, 1), c("lbp", 2, 2, 1), c("lkr", 2, 2, 1), c("lrd", 2, 2, 1),
    c("lsl", 2, 2, 1), c("mad", 2, 2, 1), c("mdl", 2, 2, 1), c("mga", 0, 0, 1),
    c("mkd", 2, 2, 1), c("mmk", 2, 2, 1), c("mnt", 2, 2, 1), c("mop", 2, 2, 1),
    c("mur", 2, 2, 1), c("mvr", 2, 2, 1), c("mwk", 2, 2, 1), c("mxn", 2, 2, 1),
    c("myr", 2, 2, 1), c("mzn", 2, 2, 1), c("nad", 2, 2, 1), c("ngn", 2, 2, 1),
    c("nio", 2, 2, 1), c("nok", 2, 2, 1), c("npr", 2, 2, 1), c("nzd", 2, 2, 1),
    c("omr", 3, 3, 10), c("pab", 2, 2, 1), c("pen", 2, 2, 1), c("pgk", 2, 2, 1),
    c("php", 2, 2, 1), c("pkr", 2, 2, 1), c("pln", 2, 2, 1), c("pyg", 0, 0, 1),
    c("qar", 2, 2, 1), c("ron", 2, 2, 1), c("rsd", 2, 2, 1), c("rub", 2, 2, 1),
    c("rwf", 0, 0, 1), c("sar", 2, 2, 1), c("sbd", 2, 2, 1), c("scr", 2, 2, 1),
    c("sek", 2, 2, 1), c("sgd", 2, 2, 1), c("shp", 2, 2, 1), c("sle", 2, 2, 1),
    c("sos", 2, 2, 1), c("srd", 2, 2, 1), c("szl", 2, 2, 1), c("thb", 2, 2, 1),
    c("tjs", 2, 2, 1), c("tnd", 3, 3, 10), c("top", 2, 2, 1), c("try", 2, 2, 1),
    c("ttd", 2, 2, 1), c("twd", 2, 2, 1), c("tzs", 2, 2, 1), c("uah", 2, 2, 1),
    c("ugx", 0, 0, 1), c("usd", 2, 2, 1), c("uyu", 2, 2, 1), c("uzs", 2, 2, 1),
    c("vnd", 0, 0, 1), c("vuv", 0, 0, 1), c("wst", 2, 2, 1), c("xaf", 0, 0, 1),
    c("xcd", 2, 2, 1), c("xof", 0, 0, 1), c("xpf", 0, 0, 1), c("yer", 2, 2, 1),
    c("zar", 2, 2, 1), c("zmw", 2, 2, 1),
];

/// The supported currency with this lower-case code.
pub fn currency(code: &str) -> Option<&'static Currency> {
    CURRENCIES
        .binary_search_by(|c| c.code.cmp(code))
        .ok()
        .map(|i| &CURRENCIES[i])
}

/// Decimals shown (and counted in invoicer's minor units) for a supported currency.
pub fn currency_exponent(code: &str) -> Option<u32> {
    currency(code).map(|c| c.decimals)
}

impl Currency {
    /// Our minor units as Stripe's API counts them.
    pub fn to_stripe(&self, amount: i64) -> i64 {
        amount * 10_i64.pow(self.stripe_decimals - self.decimals.min(self.stripe_decimals))
    }

    /// Stripe's amount in our minor units, or None when it is not a whole number of them (an
    /// ISK amount that is not a multiple of 100).
    pub fn from_stripe(&self, amount: i64) -> Option<i64> {
        let scale = 10_i64.pow(self.stripe_decimals - self.decimals.min(self.stripe_decimals));
        (amount % scale == 0).then_some(amount / scale)
    }

    /// Whether Stripe can charge this amount (of our minor units).
    pub fn chargeable(&self, amount: i64) -> bool {
        amount % self.step == 0
    }
}

/// Currencies offered first in the form's picker.
pub const COMMON_CURRENCIES: &[&str] = &["usd", "eur", "gbp", "cad", "aud", "chf", "jpy", "sek"];

/// The currency a business in this country (ISO 3166 alpha-2) invoices in by default, when
/// invoicer supports it: the euro area's members, then the currencies of the countries our users
/// are in. `None` for a country not listed; the form falls back to US dollars.
pub fn country_currency(country: &str) -> Option<&'static str> {
    const EURO: &[&str] = &[
        "AD", "AT", "BE", "BG", "CY", "DE", "EE", "ES", "FI", "FR", "GR", "HR", "IE", "IT", "LT",
        "LU", "LV", "MC", "ME", "MT", "NL", "PT", "SI", "SK", "SM", "VA", "XK",
    ];
    const OTHERS: &[(&str, &str)] = &[
        ("AU", "aud"),
        ("CA", "cad"),
        ("CH", "chf"),
        ("CZ", "czk"),
        ("DK", "dkk"),
        ("GB", "gbp"),
        ("HU", "huf"),
        ("IS", "isk"),
        ("JP", "jpy"),
        ("LI", "chf"),
        ("NO", "nok"),
        ("NZ", "nzd"),
        ("PL", "pln"),
        ("RO", "ron"),
        ("SE", "sek"),
        ("US", "usd"),
    ];
    let country = country.trim().to_ascii_uppercase();
    if EURO.contains(&country.as_str()) {
        return Some("eur");
    }
    OTHERS
        .iter()
        .find(|(c, _)| *c == country)
        .map(|(_, code)| *code)
        .filter(|code| currency(code).is_some())
}

/// `1234550, "usd"` → `12345.50`: the amount as a person types it into a form (no symbol, no
/// grouping), which `parse_amount` reads back to the same minor units.
pub fn plain_amount(minor: i64, currency: &str) -> String {
    let exponent = currency_exponent(currency).unwrap_or(2);
    let scale = 10_i64.pow(exponent);
    let sign = if minor < 0 { "-" } else { "" };
    let (whole, fraction) = (minor.abs() / scale, minor.abs() % scale);
    if exponent == 0 {
        format!("{sign}{whole}")
    } else {
        format!(
            "{sign}{whole}.{fraction:0width$}",
            width = exponent as usize
        )
    }
}

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
    #[test]
    fn a_country_names_its_currency_and_every_named_one_is_supported() {
        assert_eq!(super::country_currency("FR"), Some("eur"));
        assert_eq!(super::country_currency("fr"), Some("eur"));
        assert_eq!(super::country_currency("GB"), Some("gbp"));
        assert_eq!(super::country_currency("CH"), Some("chf"));
        assert_eq!(super::country_currency(""), None);
        assert_eq!(super::country_currency("ZZ"), None);
        for country in [
            "AU", "CA", "CZ", "DK", "HU", "IS", "JP", "NO", "NZ", "PL", "RO", "SE", "US",
        ] {
            let code = super::country_currency(country).expect(country);
            assert!(super::currency(code).is_some(), "{country} → {code}");
        }
    }

    use super::*;

    #[test]
    fn plain_amounts_parse_back_to_the_same_minor_units() {
        for (minor, code) in [
            (0, "usd"),
            (5, "usd"),
            (1_234_550, "usd"),
            (100_000_000, "eur"),
            (1_234, "jpy"),
            (1_230, "kwd"),
        ] {
            let text = plain_amount(minor, code);
            assert_eq!(parse_amount(&text, code), Ok(minor), "{text} {code}");
        }
        assert_eq!(plain_amount(1_234_550, "usd"), "12345.50");
        assert_eq!(plain_amount(1_234, "jpy"), "1234");
    }

    #[test]
    fn amounts_follow_the_currency() {
        assert_eq!(parse_amount("12", "usd"), Ok(1200));
        assert_eq!(parse_amount("1,000.5", "usd"), Ok(100_050));
        assert_eq!(parse_amount(".5", "eur"), Ok(50));
        assert_eq!(parse_amount("500", "jpy"), Ok(500));
        assert!(parse_amount("5.5", "jpy").is_err());
        assert_eq!(parse_amount("1.230", "kwd"), Ok(1230));
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

    #[test]
    fn the_table_is_sorted_and_follows_stripe() {
        assert!(
            CURRENCIES.windows(2).all(|w| w[0].code < w[1].code),
            "sorted, unique"
        );
        let isk = currency("isk").unwrap();
        assert_eq!(
            (isk.decimals, isk.to_stripe(500), isk.from_stripe(50_000)),
            (0, 50_000, Some(500))
        );
        assert_eq!(
            isk.from_stripe(50_050),
            None,
            "fractional krónur are not ours"
        );
        let mga = currency("mga").unwrap();
        assert_eq!((mga.decimals, mga.to_stripe(1_000)), (0, 1_000));
        let kwd = currency("kwd").unwrap();
        assert!(kwd.chargeable(5_120) && !kwd.chargeable(5_124));
        assert_eq!(currency("usd").unwrap().to_stripe(1_050), 1_050);
        assert_eq!(currency("iqd"), None, "not a Stripe presentment currency");
        for zero in [
            "bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd",
            "vuv", "xaf", "xof", "xpf",
        ] {
            assert_eq!(currency(zero).unwrap().stripe_decimals, 0, "{zero}");
        }
    }
}
