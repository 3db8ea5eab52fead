# Deutsch. Jede Nachricht aus en.ftl, mit denselben Argumenten.

## Dates
date-long = { $day }. { $month } { $year }

## Shared by the pages and the PDFs
due-on-receipt = { $date } (zahlbar sofort)
due-net = { $date } (netto { $days } Tage)
discount-percent = Rabatt ({ $percent } %)
discount = Rabatt
subtotal = Zwischensumme
total = Gesamtbetrag
credited = Gutgeschrieben
paid = Bezahlt
amount-due = Offener Betrag
bank-holder = Kontoinhaber
bank-iban = IBAN
bank-bic = BIC
bank-account = Konto
bank-reference = Verwendungszweck
bank-creditor-reference = Strukturierte Referenz
payment-qr = Mit Ihrer Banking-App scannen, um per Überweisung zu zahlen
pay-by-transfer = Zahlung per Überweisung
mention-exempt = Von der Umsatzsteuer befreit
mention-reverse-charge = Steuerschuldnerschaft des Leistungsempfängers (Artikel 196, Richtlinie 2006/112/EG)
mention-intra-community = Steuerfreie innergemeinschaftliche Lieferung (Artikel 138, Richtlinie 2006/112/EG)
mention-export = Steuerfreie Ausfuhrlieferung außerhalb der EU (Artikel 146, Richtlinie 2006/112/EG)
mention-not-subject = Nicht umsatzsteuerbar
col-description = Beschreibung
col-qty = Menge
col-unit-price = Einzelpreis
col-tax = Steuer
col-amount = Betrag
items = Positionen
billed-to = Rechnungsempfänger
tax-id = USt-IdNr.: { $id }
download-pdf = PDF herunterladen
einvoice-xml = E-Rechnung (XML)
issued = Ausgestellt
number = Nummer

## The invoice
invoice = Rechnung
invoice-title = Rechnung { $number } von { $org }
status-paid = Bezahlt
status-refunded = Erstattet
status-processing = Zahlung in Bearbeitung: wir bestätigen den Eingang
status-overdue = Überfällig: war fällig am { $due }
status-due = Fällig am { $due }
pay-amount = { $amount } bezahlen

## The quote
quote = Angebot
quote-title = Angebot { $number } von { $org }
quote-valid-until = Gültig bis { $date }
quote-expired-on = Abgelaufen am { $date }
quote-accepted = Angenommen: vielen Dank
quote-declined = Abgelehnt
quote-for = Für
quote-accept = { $amount } annehmen
quote-decline = Ablehnen
quote-view-invoice = Ihre Rechnung ansehen
quote-expired = Dieses Angebot ist abgelaufen
quote-expired-text = Es war gültig bis { $date }. Nichts wurde angenommen: bitten Sie { $org } um ein neues Angebot.
quote-back = Zurück zum Angebot

## The credit note
credit-note = Gutschrift
credit-note-title = Gutschrift { $number } von { $org }
for-invoice = Zur Rechnung
reason = Grund

## The statement
statement = Kontoauszug
statement-title = Kontoauszug für { $customer } von { $org }
statement-period = Zeitraum: { $from } bis { $to }
statement-empty = In diesem Zeitraum wurde nichts berechnet, bezahlt oder geschuldet.
statement-in = In { $currency }
col-date = Datum
col-reference = Referenz
col-what = Vorgang
col-charged = Belastet
col-paid-or-credited = Bezahlt oder gutgeschrieben
col-balance = Saldo
balance-forward = Saldovortrag
balance-due = Offener Saldo

## PDFs
pdf-invoice = RECHNUNG
pdf-credit-note = GUTSCHRIFT
pdf-statement = KONTOAUSZUG
pdf-number = Nummer { $number }
pdf-issued = Ausgestellt am { $date }
pdf-due = Fällig am { $due }
pdf-status = Status: { $status }
pdf-tax-id = USt-IdNr. { $id }
pdf-line-tax = Steuer: { $name } { $percent } %
pdf-for-invoice = Zur Rechnung { $number }
pdf-page = { $document } · Seite { $page } von { $pages }
pdf-invoice-footer = { $org } · Rechnung { $number }
pdf-credit-note-footer = { $org } · Gutschrift { $number }
pdf-paid-credited = Bezahlt/gutgeschr.
pdf-statement-footer = { $org } · Kontoauszug für { $customer }
statement-truncated = Nur die ersten Buchungen sind aufgeführt: wählen Sie einen kürzeren Zeitraum.
state-draft = Entwurf
state-open = offen
state-paid = bezahlt
state-void = storniert
state-uncollectible = uneinbringlich
state-refunded = erstattet
state-overdue = überfällig

## Emails
mail-invoice-subject = Rechnung { $number } von { $org }
mail-invoice-body = Hallo { $customer },

    { $org } hat Ihnen die Rechnung { $number } über { $total } gesendet, fällig am { $due }.
mail-transfer = Zahlung per Überweisung:
mail-reminder-subject-before = Erinnerung: Rechnung { $number } ist am { $due } fällig
mail-reminder-subject-today = Erinnerung: Rechnung { $number } ist heute fällig
mail-reminder-subject-after = Erinnerung: Rechnung { $number } war am { $due } fällig
mail-reminder-body = Rechnung { $number } von { $org }: { $left } von { $total } sind noch offen, fällig am { $due }.
mail-receipt-subject = Zahlungsbestätigung für { $number }
mail-receipt-body = Hallo { $customer },

    wir haben Ihre Zahlung von { $amount } für die Rechnung { $number } ({ $total }) erhalten.
    Vielen Dank!
mail-hello = Hallo { $customer },
mail-quote-subject = Angebot { $number } von { $org }
mail-quote-body = Hallo { $customer },

    { $org } hat Ihnen das Angebot { $number } über { $total } gesendet, gültig bis { $date }.

    Hier können Sie es annehmen oder ablehnen:
pay-automatically = Nächstes Mal automatisch bezahlen
pay-automatically-hint = Speichern Sie eine Karte oder ein SEPA-Lastschriftmandat: Ihre nächsten Rechnungen werden bei Ausstellung damit bezahlt.
saved-methods = Ihre gespeicherten Zahlungsmittel
method-card = { $brand }-Karte mit Endziffern { $last4 }
method-debit = SEPA-Lastschrift, Mandat { $reference }
method-default = wird automatisch belastet
remove-method = Entfernen
method-saved = Ihr Zahlungsmittel ist gespeichert.
