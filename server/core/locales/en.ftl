# What the customer reads: pages, PDFs and emails. The owner's app stays English.
# Every message here exists in every other file, with the same arguments (a test checks).

## Dates (English dates are written 2026-12-05)
date-long = { $month } { $day }, { $year }

## Shared by the pages and the PDFs
due-on-receipt = { $date } (due on receipt)
due-net = { $date } (net { $days })
discount-percent = Discount ({ $percent }%)
discount = Discount
subtotal = Subtotal
total = Total
credited = Credited
paid = Paid
amount-due = Amount due
bank-holder = Account holder
bank-iban = IBAN
bank-bic = BIC
bank-account = Account
bank-reference = Reference
bank-creditor-reference = Structured reference
payment-qr = Scan with your banking app to pay by transfer
pay-by-transfer = Pay by bank transfer
mention-exempt = VAT exempt
mention-reverse-charge = Reverse charge: VAT to be accounted for by the customer (Article 196, Directive 2006/112/EC)
mention-intra-community = Intra-community supply, exempt from VAT (Article 138, Directive 2006/112/EC)
mention-export = Export outside the EU, exempt from VAT (Article 146, Directive 2006/112/EC)
mention-not-subject = Not subject to VAT
col-description = Description
col-qty = Qty
col-unit-price = Unit price
col-tax = Tax
col-amount = Amount
items = Items
billed-to = Billed to
tax-id = Tax id: { $id }
download-pdf = Download PDF
einvoice-xml = E-invoice (XML)
issued = Issued
number = Number

## The invoice
invoice = Invoice
invoice-title = Invoice { $number } from { $org }
status-paid = Paid
status-refunded = Refunded
status-processing = Payment processing: we will confirm when it arrives
status-overdue = Overdue: was due { $due }
status-due = Due { $due }
pay-amount = Pay { $amount }

## The quote
quote = Quote
quote-title = Quote { $number } from { $org }
quote-valid-until = Valid until { $date }
quote-expired-on = Expired on { $date }
quote-accepted = Accepted: thank you
quote-declined = Declined
quote-for = For
quote-accept = Accept { $amount }
quote-decline = Decline
quote-view-invoice = View your invoice
quote-expired = This quote has expired
quote-expired-text = It was valid until { $date }. Nothing was accepted: ask { $org } for a new quote.
quote-back = Back to the quote

## The credit note
credit-note = Credit note
credit-note-title = Credit note { $number } from { $org }
for-invoice = For invoice
reason = Reason

## The statement
statement = Statement
statement-title = Statement of { $customer } from { $org }
statement-period = Period: { $from } to { $to }
statement-empty = Nothing invoiced, paid or owed in this period.
statement-in = In { $currency }
col-date = Date
col-reference = Reference
col-what = What
col-charged = Charged
col-paid-or-credited = Paid or credited
col-balance = Balance
balance-forward = Balance brought forward
balance-due = Balance due

## PDFs
pdf-invoice = INVOICE
pdf-credit-note = CREDIT NOTE
pdf-statement = STATEMENT
pdf-number = Number { $number }
pdf-issued = Issued { $date }
pdf-due = Due { $due }
pdf-status = Status: { $status }
pdf-tax-id = Tax id { $id }
pdf-line-tax = Tax: { $name } { $percent }%
pdf-for-invoice = For invoice { $number }
pdf-page = { $document } · page { $page } of { $pages }
pdf-invoice-footer = { $org } · invoice { $number }
pdf-credit-note-footer = { $org } · credit note { $number }
pdf-paid-credited = Paid/credited
pdf-statement-footer = { $org } · statement of { $customer }
statement-truncated = Only the first entries are listed: ask for a shorter period.
state-draft = draft
state-open = open
state-paid = paid
state-void = void
state-uncollectible = uncollectible
state-refunded = refunded
state-overdue = overdue

## Emails
mail-invoice-subject = Invoice { $number } from { $org }
mail-invoice-body = Hello { $customer },

    { $org } has sent you invoice { $number } for { $total }, due { $due }.
mail-transfer = Pay by bank transfer:
mail-reminder-subject-before = Reminder: invoice { $number } is due on { $due }
mail-reminder-subject-today = Reminder: invoice { $number } is due today
mail-reminder-subject-after = Reminder: invoice { $number } was due on { $due }
mail-reminder-body = Invoice { $number } from { $org }: { $left } of { $total } is still to pay, due { $due }.
mail-receipt-subject = Receipt for { $number }
mail-receipt-body = Hello { $customer },

    We received your payment of { $amount } for invoice { $number } ({ $total }).
    Thank you!
mail-hello = Hello { $customer },
mail-quote-subject = Quote { $number } from { $org }
mail-quote-body = Hello { $customer },

    { $org } has sent you quote { $number } for { $total }, valid until { $date }.

    Accept or decline it here:
pay-automatically = Pay automatically next time
pay-automatically-hint = Save a card or a SEPA Direct Debit mandate: your next invoices are charged to it when they are issued.
saved-methods = Your saved payment methods
method-card = { $brand } card ending { $last4 }
method-debit = SEPA Direct Debit, mandate { $reference }
method-default = charged automatically
remove-method = Remove
method-saved = Your payment method is saved.
