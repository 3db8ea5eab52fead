//! An invoice's totals, in integer minor units, by one rule:
//!
//! 1. each line's amount is quantity × unit price, rounded **half up** to the currency's smallest
//!    chargeable unit (a cent; ten fils for the three-decimal dinars);
//! 2. the subtotal is the sum of the line amounts;
//! 3. the discount is a fixed amount, or a percentage of the subtotal rounded half up;
//! 4. the discount is shared among the lines in proportion to their amounts (largest remainder, so
//!    the shares add up to the discount exactly; ties go to the earlier line);
//! 5. each line's tax is its rate applied to its amount after its share of the discount, rounded
//!    half up: tax is rounded **per line**, then summed per rate;
//! 6. total = subtotal − discount + taxes.
//!
//! Amounts are never negative, so "half up" and "half away from zero" agree.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::decimal::Thousandths;

/// An invoice-level discount: `{"percent": 10}` or `{"amount_cents": 500}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Discount {
    /// 0 to 100, up to 3 decimals, of the subtotal.
    Percent(Thousandths),
    /// A fixed amount in minor units, at most the subtotal.
    AmountCents(i64),
}

#[cfg(feature = "server")]
impl utoipa::PartialSchema for Discount {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, OneOfBuilder, Type};
        let one = |name: &str, value: ObjectBuilder, description: &str| {
            ObjectBuilder::new()
                .property(name, value)
                .required(name)
                .additional_properties(Some(AdditionalProperties::FreeForm(false)))
                .description(Some(description))
        };
        OneOfBuilder::new()
            .item(one(
                "percent",
                ObjectBuilder::new()
                    .schema_type(Type::Number)
                    .minimum(Some(0))
                    .maximum(Some(100)),
                "A percentage of the subtotal (up to 3 decimals), rounded half up.",
            ))
            .item(one(
                "amount_cents",
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                        utoipa::openapi::KnownFormat::Int64,
                    )))
                    .minimum(Some(0)),
                "A fixed amount in minor units, at most the subtotal.",
            ))
            .into()
    }
}

#[cfg(feature = "server")]
impl utoipa::ToSchema for Discount {}

/// A tax as it applies to a line: which org rate, its name and percent when applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedTax {
    pub rate_id: Uuid,
    pub name: String,
    /// Thousandths of a percent: 8.875 % is 8875.
    pub percent: Thousandths,
    /// Its VAT category, and why an exempt one is exempt.
    pub category: super::TaxCategory,
    pub exemption_reason: String,
}

/// What the rule needs of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineBasis {
    pub quantity: Thousandths,
    pub unit_amount_cents: i64,
    pub tax: Option<AppliedTax>,
}

/// What the rule gives for a line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineAmounts {
    pub amount_cents: i64,
    pub discount_cents: i64,
    pub tax_cents: i64,
}

/// One rate's tax on the invoice: the sum of its lines' taxes.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaxTotal {
    pub tax_rate_id: Uuid,
    pub name: String,
    #[cfg_attr(feature = "server", schema(value_type = f64))]
    pub percent: Thousandths,
    pub amount_cents: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Totals {
    pub lines: Vec<LineAmounts>,
    pub subtotal_cents: i64,
    pub discount_cents: i64,
    pub taxes: Vec<TaxTotal>,
    pub tax_cents: i64,
    pub total_cents: i64,
}

/// `numerator / denominator` rounded half up to a multiple of `step` (all non-negative).
fn round_half_up(numerator: i128, denominator: i128, step: i64) -> i64 {
    let unit = denominator * step as i128;
    (((numerator * 2 + unit) / (unit * 2)) * step as i128) as i64
}

/// `quantity` of a line of `line_quantity` whose amount (discount and tax included) is `gross`:
/// its share, rounded half up to `step` (all of it for the whole quantity).
pub fn part_of_line(
    gross: i64,
    quantity: Thousandths,
    line_quantity: Thousandths,
    step: i64,
) -> i64 {
    if quantity.0 >= line_quantity.0 {
        return gross;
    }
    round_half_up(
        gross as i128 * quantity.0 as i128,
        line_quantity.0 as i128,
        step,
    )
}

/// A line's amount before discount and tax: quantity × unit price, rounded half up to `step`.
pub fn line_amount(quantity: Thousandths, unit_amount_cents: i64, step: i64) -> i64 {
    round_half_up(quantity.0 as i128 * unit_amount_cents as i128, 1000, step)
}

/// Steps 1, 3 and 4 of the rule, for net and gross prices alike: the lines' amounts, their sum,
/// the discount (capped at the sum) and each line's share of it.
fn discounted(
    lines: &[LineBasis],
    discount: Option<Discount>,
    step: i64,
) -> (Vec<i64>, i64, i64, Vec<i64>) {
    let amounts: Vec<i64> = lines
        .iter()
        .map(|l| line_amount(l.quantity, l.unit_amount_cents, step))
        .collect();
    let subtotal: i64 = amounts.iter().sum();
    let discount = match discount {
        None => 0,
        Some(Discount::Percent(p)) => round_half_up(subtotal as i128 * p.0 as i128, 100_000, step),
        Some(Discount::AmountCents(a)) => a,
    }
    .clamp(0, subtotal);
    let shares = share(discount, &amounts, step);
    (amounts, subtotal, discount, shares)
}

/// The totals of `lines` with `discount`, in a currency whose amounts are multiples of `step`.
/// A fixed discount larger than the subtotal is the caller's to refuse; here it is capped.
pub fn compute(lines: &[LineBasis], discount: Option<Discount>, step: i64) -> Totals {
    let (amounts, subtotal, discount, shares) = discounted(lines, discount, step);

    let mut out = Vec::with_capacity(lines.len());
    let mut taxes: Vec<TaxTotal> = Vec::new();
    for ((line, amount), share) in lines.iter().zip(&amounts).zip(&shares) {
        let tax = match &line.tax {
            None => 0,
            Some(t) => {
                let tax = round_half_up(
                    (amount - share) as i128 * t.percent.0 as i128,
                    100_000,
                    step,
                );
                match taxes.iter_mut().find(|x| x.tax_rate_id == t.rate_id) {
                    Some(total) => total.amount_cents += tax,
                    None => taxes.push(TaxTotal {
                        tax_rate_id: t.rate_id,
                        name: t.name.clone(),
                        percent: t.percent,
                        amount_cents: tax,
                    }),
                }
                tax
            }
        };
        out.push(LineAmounts {
            amount_cents: *amount,
            discount_cents: *share,
            tax_cents: tax,
        });
    }
    let tax: i64 = out.iter().map(|l| l.tax_cents).sum();
    Totals {
        lines: out,
        subtotal_cents: subtotal,
        discount_cents: discount,
        taxes,
        tax_cents: tax,
        total_cents: subtotal - discount + tax,
    }
}

/// The totals of gross-priced `lines` (each unit price includes its tax) with `discount` (of the
/// gross subtotal), in a currency whose amounts are multiples of `step`:
///
/// 1. each line's gross amount is quantity × unit price, rounded half up; the discount (a
///    percentage of their sum rounded half up, or an amount) is shared among them as for net prices;
/// 2. per rate, the tax is computed **once**, from the sum of its lines' gross amounts after their
///    discount: gross × rate / (100 + rate), rounded half up; the net is that sum less the tax;
/// 3. so the total is exactly the gross amounts less the discount, whatever the rates.
///
/// The lines are given in net terms (what EN 16931 writes): each rate's tax is shared among its
/// lines by their discounted gross amounts, and the tax the discount takes off (the rate's tax on
/// the undiscounted gross, less its tax) among them by their discount shares; a line's net amount is
/// its gross less both, its net discount its gross discount less the latter. Per line,
/// net − net discount + tax = gross − discount.
pub fn compute_gross(lines: &[LineBasis], discount: Option<Discount>, step: i64) -> Totals {
    let (gross, subtotal, discount, shares) = discounted(lines, discount, step);
    let mut out: Vec<LineAmounts> = gross
        .iter()
        .zip(&shares)
        .map(|(g, d)| LineAmounts {
            amount_cents: *g,
            discount_cents: *d,
            tax_cents: 0,
        })
        .collect();
    let mut taxes: Vec<TaxTotal> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(t) = &line.tax else { continue };
        if taxes.iter().any(|x| x.tax_rate_id == t.rate_id) {
            continue;
        }
        // The rate's lines, once, in order.
        let members: Vec<usize> = (i..lines.len())
            .filter(|j| {
                lines[*j]
                    .tax
                    .as_ref()
                    .is_some_and(|x| x.rate_id == t.rate_id)
            })
            .collect();
        let of_rate =
            |amounts: &dyn Fn(usize) -> i64| -> i64 { members.iter().map(|j| amounts(*j)).sum() };
        let net_of = |g: i64| {
            round_half_up(
                g as i128 * t.percent.0 as i128,
                100_000 + t.percent.0 as i128,
                step,
            )
        };
        let discounted = of_rate(&|j| gross[j] - shares[j]);
        let tax = net_of(discounted);
        let undiscounted_tax = net_of(of_rate(&|j| gross[j]));
        let line_taxes = share(
            tax,
            &members
                .iter()
                .map(|j| gross[*j] - shares[*j])
                .collect::<Vec<_>>(),
            step,
        );
        let discount_taxes = share(
            undiscounted_tax - tax,
            &members.iter().map(|j| shares[*j]).collect::<Vec<_>>(),
            step,
        );
        for ((j, line_tax), discount_tax) in members.iter().zip(line_taxes).zip(discount_taxes) {
            let l = &mut out[*j];
            l.tax_cents = line_tax;
            l.amount_cents = gross[*j] - line_tax - discount_tax;
            l.discount_cents = shares[*j] - discount_tax;
        }
        taxes.push(TaxTotal {
            tax_rate_id: t.rate_id,
            name: t.name.clone(),
            percent: t.percent,
            amount_cents: tax,
        });
    }
    let tax: i64 = taxes.iter().map(|x| x.amount_cents).sum();
    let net: i64 = out.iter().map(|l| l.amount_cents).sum();
    let net_discount: i64 = out.iter().map(|l| l.discount_cents).sum();
    Totals {
        lines: out,
        subtotal_cents: net,
        discount_cents: net_discount,
        taxes,
        tax_cents: tax,
        total_cents: subtotal - discount,
    }
}

/// `discount` shared among `amounts` in proportion, in whole `step`s, by largest remainder.
fn share(discount: i64, amounts: &[i64], step: i64) -> Vec<i64> {
    let subtotal: i64 = amounts.iter().sum();
    if discount == 0 || subtotal == 0 {
        return vec![0; amounts.len()];
    }
    let units = (discount / step) as i128;
    let subtotal = subtotal as i128;
    let mut shares: Vec<i64> = Vec::with_capacity(amounts.len());
    let mut remainders: Vec<(i128, usize)> = Vec::with_capacity(amounts.len());
    for (i, a) in amounts.iter().enumerate() {
        let exact = units * *a as i128;
        shares.push((exact / subtotal) as i64);
        remainders.push((exact % subtotal, i));
    }
    let left = units as i64 - shares.iter().sum::<i64>();
    remainders.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for (_, i) in remainders.into_iter().take(left as usize) {
        shares[i] += 1;
    }
    shares.into_iter().map(|s| s * step).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(n: u128, percent: i64) -> Option<AppliedTax> {
        Some(AppliedTax {
            rate_id: Uuid::from_u128(n),
            name: format!("Tax {n}"),
            percent: Thousandths(percent),
            category: super::super::TaxCategory::S,
            exemption_reason: String::new(),
        })
    }

    fn line(quantity: i64, unit: i64, tax: Option<AppliedTax>) -> LineBasis {
        LineBasis {
            quantity: Thousandths(quantity),
            unit_amount_cents: unit,
            tax,
        }
    }

    /// (case, lines, discount, step) → per line (amount, discount share, tax), then the total; the
    /// subtotal and the discount are the sums of the per-line numbers. Every expected number is worked
    /// out by hand in the comment.
    #[test]
    fn the_totals_table() {
        type Case = (
            &'static str,
            Vec<LineBasis>,
            Option<Discount>,
            i64,
            Vec<(i64, i64, i64)>,
            i64,
        );
        let three_at_20 = || vec![line(1000, 100, rate(1, 20_000)); 3];
        #[rustfmt::skip]
        let cases: Vec<Case> = vec![
            // 3 × 12.50 = 37.50, no discount, no tax.
            ("plain", vec![line(3000, 1250, None)], None, 1, vec![(3750, 0, 0)], 3750),
            // 1.5 h × 0.01 = 0.015 → half up → 0.02.
            ("half a cent rounds up", vec![line(1500, 1, None)], None, 1, vec![(2, 0, 0)], 2),
            // 0.333 × 10.00 = 3.33 exactly; 0.001 × 4.99 = 0.00499 → 0.00.
            ("below half rounds down", vec![line(333, 1000, None), line(1, 499, None)], None, 1,
             vec![(333, 0, 0), (0, 0, 0)], 333),
            // 10.00 at 8.875 % = 0.8875 → 0.89 (half up of 88.75 cents).
            ("three-decimal tax rate", vec![line(1000, 1000, rate(1, 8875))], None, 1, vec![(1000, 0, 89)], 1089),
            // Two lines of 0.10 at 5 %: 0.005 each → 0.01 each, per line (0.02), where rounding
            // the sum (0.01) would differ. The rule is per line.
            ("tax rounds per line, not on the sum", vec![line(1000, 10, rate(1, 5000)); 2], None, 1,
             vec![(10, 0, 1), (10, 0, 1)], 22),
            // 10 % of 1.05 = 0.105 → 0.11; shared 100:5 of 11 cents → 10.476 | 0.524: floors 10 | 0,
            // one cent left to the larger remainder (line 2: 0.524) → 10 | 1.
            ("percent discount, largest remainder", vec![line(1000, 100, None), line(1000, 5, None)],
             Some(Discount::Percent(Thousandths(10_000))), 1, vec![(100, 10, 0), (5, 1, 0)], 94),
            // 1.00 off 3 × 1.00 lines: 0.333… each, one cent left over → the earliest line.
            // Taxes 20 % on 0.66 | 0.67 | 0.67: 0.132 → 0.13, 0.134 → 0.13, 0.134 → 0.13.
            ("fixed discount, tie goes first, tax after discount", three_at_20(), Some(Discount::AmountCents(100)), 1,
             vec![(100, 34, 13), (100, 33, 13), (100, 33, 13)], 300 - 100 + 39),
            // Two rates on one invoice: 19 % of 100.00 = 19.00, 7 % of 20.00 = 1.40.
            ("two rates", vec![line(1000, 10_000, rate(1, 19_000)), line(2000, 1000, rate(2, 7000))], None, 1,
             vec![(10_000, 0, 1900), (2000, 0, 140)], 12_000 + 2040),
            // KWD counts in fils but charges in tens: 1.5 × 0.350 = 0.525 → 0.530; 5 % of 0.530 =
            // 0.0265 → 0.030.
            ("three-decimal currency rounds to ten fils", vec![line(1500, 350, rate(1, 5000))], None, 10,
             vec![(530, 0, 30)], 560),
            // 100 % off: nothing left to tax.
            ("everything off", vec![line(2000, 500, rate(1, 20_000))], Some(Discount::Percent(Thousandths(100_000))), 1,
             vec![(1000, 1000, 0)], 0),
            // Largest amounts the input allows: 1,000,000 × 1,000,000.00, no overflow.
            ("largest line", vec![line(1_000_000_000, 100_000_000, rate(1, 100_000))], None, 1,
             vec![(100_000_000_000_000, 0, 100_000_000_000_000)], 200_000_000_000_000),
        ];
        for (name, lines, discount, step, per_line, total) in cases {
            let t = compute(&lines, discount, step);
            let got: Vec<_> = t
                .lines
                .iter()
                .map(|l| (l.amount_cents, l.discount_cents, l.tax_cents))
                .collect();
            assert_eq!(got, per_line, "{name}: (amount, share, tax) per line");
            assert_eq!(t.total_cents, total, "{name}: total");
            assert_eq!(
                t.subtotal_cents,
                per_line.iter().map(|l| l.0).sum::<i64>(),
                "{name}"
            );
            assert_eq!(
                t.discount_cents,
                per_line.iter().map(|l| l.1).sum::<i64>(),
                "{name}"
            );
            assert_eq!(
                t.taxes.iter().map(|x| x.amount_cents).sum::<i64>(),
                t.tax_cents,
                "{name}: per-rate taxes add up"
            );
            assert!(
                t.lines.iter().all(|l| l.amount_cents % step == 0
                    && l.discount_cents % step == 0
                    && l.tax_cents % step == 0),
                "{name}: chargeable units"
            );
        }
    }

    /// Gross prices: (case, lines, discount, step) → per line (net, net discount, tax), then the
    /// total, which is always the gross amounts less the discount. Worked by hand in the comments.
    #[test]
    fn the_gross_totals_table() {
        type Case = (
            &'static str,
            Vec<LineBasis>,
            Option<Discount>,
            i64,
            Vec<(i64, i64, i64)>,
            i64,
        );
        #[rustfmt::skip]
        let cases: Vec<Case> = vec![
            // A shop's 500.00 including 10 %: tax 500 × 10/110 = 45.4545… → 45.45; net 454.55.
            ("500 including 10 %", vec![line(1000, 50_000, rate(1, 10_000))], None, 1,
             vec![(45_455, 0, 4545)], 50_000),
            // 119.00 at 19 % and 107.00 at 7 %: taxes 19.00 and 7.00 exactly; nets 100.00 each.
            ("two rates", vec![line(1000, 11_900, rate(1, 19_000)), line(1000, 10_700, rate(2, 7000))], None, 1,
             vec![(10_000, 0, 1900), (10_000, 0, 700)], 22_600),
            // Three lines of 0.35 at 19 %: per rate 1.05 × 19/119 = 0.16765 → 0.17 (per line it would
            // be 3 × 0.06 = 0.18); shared 35:35:35 → 6, 6, 5 (the first lines take the remainder).
            ("the tax is the rate's, not the lines'", vec![line(1000, 35, rate(1, 19_000)); 3], None, 1,
             vec![(29, 0, 6), (29, 0, 6), (30, 0, 5)], 105),
            // Half a cent: 0.05 at 100 % is 0.025 → 0.03 tax (half up), 0.02 net.
            ("half a cent rounds up", vec![line(1000, 5, rate(1, 100_000))], None, 1,
             vec![(2, 0, 3)], 5),
            // 60.00 and 40.00 at 20 %, 10 % off: discount 10.00 shared 6.00 | 4.00; after it 90.00,
            // tax 90 × 20/120 = 15.00 shared 9.00 | 6.00. Undiscounted tax 100 × 20/120 = 16.666… →
            // 16.67, so the discount takes 1.67 of tax off, shared 6:4 → 1.002 | 0.668 → 1.00 | 0.67.
            // Nets 60 − 9 − 1 = 50.00 and 40 − 6 − 0.67 = 33.33; net discounts 5.00 and 3.33.
            ("a discount on gross prices", vec![line(1000, 6000, rate(1, 20_000)), line(1000, 4000, rate(1, 20_000))],
             Some(Discount::Percent(Thousandths(10_000))), 1,
             vec![(5000, 500, 900), (3333, 333, 600)], 9000),
            // JPY: ¥1,000 including 10 % → ¥90.909… → ¥91; net ¥909.
            ("zero-decimal currency", vec![line(1000, 1000, rate(1, 10_000))], None, 1,
             vec![(909, 0, 91)], 1000),
            // KWD in steps of ten fils: 1.050 at 5 % → 0.05 → 0.050; net 1.000.
            ("three-decimal currency", vec![line(1000, 1050, rate(1, 5000))], None, 10,
             vec![(1000, 0, 50)], 1050),
            // A line without tax is its gross; 2.00 off 10.00 and 10.00 (at 25 %): 1.00 each. Rate:
            // 9.00 × 25/125 = 1.80; undiscounted 2.00, so the discount takes 0.20 of tax.
            ("untaxed and taxed", vec![line(1000, 1000, None), line(1000, 1000, rate(1, 25_000))],
             Some(Discount::AmountCents(200)), 1,
             vec![(1000, 100, 0), (800, 80, 180)], 1800),
        ];
        for (name, lines, discount, step, per_line, total) in cases {
            let t = compute_gross(&lines, discount, step);
            let got: Vec<_> = t
                .lines
                .iter()
                .map(|l| (l.amount_cents, l.discount_cents, l.tax_cents))
                .collect();
            assert_eq!(got, per_line, "{name}: (net, net discount, tax) per line");
            assert_eq!(t.total_cents, total, "{name}: total");
            assert_eq!(
                t.subtotal_cents - t.discount_cents + t.tax_cents,
                t.total_cents,
                "{name}: the net terms add up to the gross total"
            );
            assert_eq!(
                t.taxes.iter().map(|x| x.amount_cents).sum::<i64>(),
                t.tax_cents,
                "{name}"
            );
        }
    }

    #[test]
    fn taxes_are_grouped_by_rate_in_first_seen_order() {
        let t = compute(
            &[
                line(1000, 1000, rate(2, 7000)),
                line(1000, 1000, rate(1, 19_000)),
                line(1000, 1000, rate(2, 7000)),
                line(1000, 1000, None),
            ],
            None,
            1,
        );
        let names: Vec<(&str, i64)> = t
            .taxes
            .iter()
            .map(|x| (x.name.as_str(), x.amount_cents))
            .collect();
        assert_eq!(names, [("Tax 2", 140), ("Tax 1", 190)]);
    }

    #[test]
    fn shares_always_add_up_to_the_discount() {
        // A deterministic sweep of awkward splits.
        for discount in [1_i64, 7, 99, 100, 101, 12_345] {
            for amounts in [
                vec![1, 1, 1],
                vec![3, 0, 7],
                vec![999, 1],
                vec![5; 7],
                vec![100_000, 3, 3],
            ] {
                let subtotal: i64 = amounts.iter().sum();
                let d = discount.min(subtotal);
                let shares = share(d, &amounts, 1);
                assert_eq!(shares.iter().sum::<i64>(), d, "{d} over {amounts:?}");
                assert!(
                    shares.iter().zip(&amounts).all(|(s, a)| s <= a),
                    "{shares:?} {amounts:?}"
                );
            }
        }
    }
}
