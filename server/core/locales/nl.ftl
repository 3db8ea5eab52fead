# Nederlands. Elk bericht uit en.ftl, met dezelfde argumenten.

## Dates
date-long = { $day } { $month } { $year }

## Shared by the pages and the PDFs
due-on-receipt = { $date } (direct te betalen)
due-net = { $date } (binnen { $days } dagen)
discount-percent = Korting ({ $percent }%)
discount = Korting
subtotal = Subtotaal
total = Totaal
credited = Gecrediteerd
paid = Betaald
amount-due = Te betalen
bank-holder = Rekeninghouder
bank-iban = IBAN
bank-bic = BIC
bank-account = Rekening
bank-reference = Kenmerk
bank-creditor-reference = Gestructureerde referentie
payment-qr = Scan met uw bank-app om per overschrijving te betalen
pay-by-transfer = Betalen per overschrijving
mention-exempt = Vrijgesteld van btw
mention-reverse-charge = Btw verlegd: de btw wordt door de afnemer afgedragen (artikel 196, Richtlijn 2006/112/EG)
mention-intra-community = Intracommunautaire levering, vrijgesteld van btw (artikel 138, Richtlijn 2006/112/EG)
mention-export = Uitvoer buiten de EU, vrijgesteld van btw (artikel 146, Richtlijn 2006/112/EG)
mention-not-subject = Niet onderworpen aan btw
col-description = Omschrijving
col-qty = Aantal
col-unit-price = Prijs per stuk
col-tax = Btw
col-amount = Bedrag
items = Regels
billed-to = Factuur aan
tax-id = Btw-nummer: { $id }
download-pdf = PDF downloaden
einvoice-xml = E-factuur (XML)
issued = Datum
number = Nummer

## The invoice
invoice = Factuur
invoice-title = Factuur { $number } van { $org }
status-paid = Betaald
status-refunded = Terugbetaald
status-processing = Betaling in behandeling: we bevestigen zodra ze binnen is
status-overdue = Te laat: vervallen op { $due }
status-due = Te betalen vóór { $due }
pay-amount = { $amount } betalen

## The quote
quote = Offerte
quote-title = Offerte { $number } van { $org }
quote-valid-until = Geldig tot { $date }
quote-expired-on = Verlopen op { $date }
quote-accepted = Geaccepteerd: dank u
quote-declined = Afgewezen
quote-for = Voor
quote-accept = { $amount } accepteren
quote-decline = Afwijzen
quote-view-invoice = Uw factuur bekijken
quote-expired = Deze offerte is verlopen
quote-expired-text = Ze was geldig tot { $date }. Er is niets geaccepteerd: vraag { $org } om een nieuwe offerte.
quote-back = Terug naar de offerte

## The credit note
credit-note = Creditnota
credit-note-title = Creditnota { $number } van { $org }
for-invoice = Voor factuur
reason = Reden

## The statement
statement = Rekeningoverzicht
statement-title = Rekeningoverzicht van { $customer } bij { $org }
statement-period = Periode: { $from } tot en met { $to }
statement-empty = Niets gefactureerd, betaald of verschuldigd in deze periode.
statement-in = In { $currency }
col-date = Datum
col-reference = Kenmerk
col-what = Omschrijving
col-charged = Gefactureerd
col-paid-or-credited = Betaald of gecrediteerd
col-balance = Saldo
balance-forward = Saldo vorige periode
balance-due = Openstaand saldo

## PDFs
pdf-invoice = FACTUUR
pdf-credit-note = CREDITNOTA
pdf-statement = REKENINGOVERZICHT
pdf-number = Nummer { $number }
pdf-issued = Datum { $date }
pdf-due = Te betalen vóór { $due }
pdf-status = Status: { $status }
pdf-tax-id = Btw-nummer { $id }
pdf-line-tax = Btw: { $name } { $percent }%
pdf-for-invoice = Voor factuur { $number }
pdf-page = { $document } · pagina { $page } van { $pages }
pdf-invoice-footer = { $org } · factuur { $number }
pdf-credit-note-footer = { $org } · creditnota { $number }
pdf-paid-credited = Betaald/gecred.
pdf-statement-footer = { $org } · rekeningoverzicht van { $customer }
statement-truncated = Alleen de eerste boekingen staan hier: vraag een kortere periode.
state-draft = concept
state-open = openstaand
state-paid = betaald
state-void = vervallen
state-uncollectible = oninbaar
state-refunded = terugbetaald
state-overdue = te laat

## Emails
mail-invoice-subject = Factuur { $number } van { $org }
mail-invoice-body = Beste { $customer },

    { $org } heeft u factuur { $number } gestuurd van { $total }, te betalen vóór { $due }.
mail-transfer = Betalen per overschrijving:
mail-reminder-subject-before = Herinnering: factuur { $number } vervalt op { $due }
mail-reminder-subject-today = Herinnering: factuur { $number } vervalt vandaag
mail-reminder-subject-after = Herinnering: factuur { $number } verviel op { $due }
mail-reminder-body = Factuur { $number } van { $org }: { $left } van { $total } staat nog open, te betalen vóór { $due }.
mail-receipt-subject = Betalingsbewijs voor { $number }
mail-receipt-body = Beste { $customer },

    We hebben uw betaling van { $amount } voor factuur { $number } ({ $total }) ontvangen.
    Dank u wel!
mail-hello = Beste { $customer },
mail-quote-subject = Offerte { $number } van { $org }
mail-quote-body = Beste { $customer },

    { $org } heeft u offerte { $number } gestuurd van { $total }, geldig tot { $date }.

    Accepteer of wijs ze hier af:
pay-automatically = Volgende keer automatisch betalen
pay-automatically-hint = Bewaar een kaart of een SEPA-incassomachtiging: uw volgende facturen worden ermee betaald zodra ze worden uitgegeven.
saved-methods = Uw opgeslagen betaalmethoden
method-card = { $brand }-kaart eindigend op { $last4 }
method-debit = SEPA-incasso, machtiging { $reference }
method-default = wordt automatisch afgeschreven
remove-method = Verwijderen
method-saved = Uw betaalmethode is opgeslagen.
