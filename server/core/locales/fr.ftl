# Français. Chaque message de en.ftl, avec les mêmes arguments.

## Dates
date-long = { $day } { $month } { $year }

## Shared by the pages and the PDFs
due-on-receipt = { $date } (payable à réception)
due-net = { $date } (à { $days } jours)
discount-percent = Remise ({ $percent } %)
discount = Remise
subtotal = Sous-total
total = Total
credited = Crédité
paid = Payé
amount-due = Montant dû
bank-holder = Titulaire du compte
bank-iban = IBAN
bank-bic = BIC
bank-account = Compte
bank-reference = Référence
bank-creditor-reference = Référence structurée
payment-qr = Scannez avec l’application de votre banque pour payer par virement
pay-by-transfer = Payer par virement
mention-exempt = Exonéré de TVA
mention-reverse-charge = Autoliquidation : TVA due par le preneur (article 196, directive 2006/112/CE)
mention-intra-community = Livraison intracommunautaire exonérée de TVA (article 138, directive 2006/112/CE)
mention-export = Exportation hors de l'UE exonérée de TVA (article 146, directive 2006/112/CE)
mention-not-subject = Non soumis à la TVA
col-description = Description
col-qty = Qté
col-unit-price = Prix unitaire
col-tax = Taxe
col-amount = Montant
items = Articles
billed-to = Facturé à
tax-id = N° de TVA : { $id }
download-pdf = Télécharger le PDF
einvoice-xml = Facture électronique (XML)
issued = Émise le
number = Numéro

## The invoice
invoice = Facture
invoice-title = Facture { $number } de { $org }
status-paid = Payée
status-refunded = Remboursée
status-processing = Paiement en cours : nous confirmerons sa réception
status-overdue = En retard : échue le { $due }
status-due = Échéance le { $due }
pay-amount = Payer { $amount }

## The quote
quote = Devis
quote-title = Devis { $number } de { $org }
quote-valid-until = Valable jusqu'au { $date }
quote-expired-on = Expiré le { $date }
quote-accepted = Accepté : merci
quote-declined = Refusé
quote-for = Pour
quote-accept = Accepter { $amount }
quote-decline = Refuser
quote-view-invoice = Voir votre facture
quote-expired = Ce devis a expiré
quote-expired-text = Il était valable jusqu'au { $date }. Rien n'a été accepté : demandez un nouveau devis à { $org }.
quote-back = Retour au devis

## The credit note
credit-note = Avoir
credit-note-title = Avoir { $number } de { $org }
for-invoice = Pour la facture
reason = Motif

## The statement
statement = Relevé de compte
statement-title = Relevé de compte de { $customer } par { $org }
statement-period = Période : du { $from } au { $to }
statement-empty = Rien n'a été facturé, payé ou dû sur cette période.
statement-in = En { $currency }
col-date = Date
col-reference = Référence
col-what = Objet
col-charged = Débit
col-paid-or-credited = Payé ou crédité
col-balance = Solde
balance-forward = Solde reporté
balance-due = Solde dû

## PDFs
pdf-invoice = FACTURE
pdf-credit-note = AVOIR
pdf-statement = RELEVÉ DE COMPTE
pdf-number = Numéro { $number }
pdf-issued = Émise le { $date }
pdf-due = Échéance le { $due }
pdf-status = Statut : { $status }
pdf-tax-id = N° de TVA { $id }
pdf-line-tax = Taxe : { $name } { $percent } %
pdf-for-invoice = Pour la facture { $number }
pdf-page = { $document } · page { $page } sur { $pages }
pdf-invoice-footer = { $org } · facture { $number }
pdf-credit-note-footer = { $org } · avoir { $number }
pdf-paid-credited = Payé/crédité
pdf-statement-footer = { $org } · relevé de compte de { $customer }
statement-truncated = Seules les premières écritures figurent ici : demandez une période plus courte.
state-draft = brouillon
state-open = à payer
state-paid = payée
state-void = annulée
state-uncollectible = irrécouvrable
state-refunded = remboursée
state-overdue = en retard

## Emails
mail-invoice-subject = Facture { $number } de { $org }
mail-invoice-body = Bonjour { $customer },

    { $org } vous a envoyé la facture { $number } d'un montant de { $total }, échéance le { $due }.
mail-transfer = Payer par virement :
mail-reminder-subject-before = Rappel : la facture { $number } arrive à échéance le { $due }
mail-reminder-subject-today = Rappel : la facture { $number } arrive à échéance aujourd'hui
mail-reminder-subject-after = Rappel : la facture { $number } était due le { $due }
mail-reminder-body = Facture { $number } de { $org } : il reste { $left } à payer sur { $total }, échéance le { $due }.
mail-receipt-subject = Reçu pour { $number }
mail-receipt-body = Bonjour { $customer },

    Nous avons bien reçu votre paiement de { $amount } pour la facture { $number } ({ $total }).
    Merci !
mail-hello = Bonjour { $customer },
mail-quote-subject = Devis { $number } de { $org }
mail-quote-body = Bonjour { $customer },

    { $org } vous a envoyé le devis { $number } d'un montant de { $total }, valable jusqu'au { $date }.

    Acceptez-le ou refusez-le ici :
pay-automatically = Payer automatiquement la prochaine fois
pay-automatically-hint = Enregistrez une carte ou un mandat de prélèvement SEPA : vos prochaines factures seront débitées dès leur émission.
saved-methods = Vos moyens de paiement enregistrés
method-card = Carte { $brand } se terminant par { $last4 }
method-debit = Prélèvement SEPA, mandat { $reference }
method-default = débité automatiquement
remove-method = Supprimer
method-saved = Votre moyen de paiement est enregistré.
