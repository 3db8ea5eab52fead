# Español. Cada mensaje de en.ftl, con los mismos argumentos.

## Dates
date-long = { $day } de { $month } de { $year }

## Shared by the pages and the PDFs
due-on-receipt = { $date } (pago a la recepción)
due-net = { $date } (a { $days } días)
discount-percent = Descuento ({ $percent } %)
discount = Descuento
subtotal = Subtotal
total = Total
credited = Abonado
paid = Pagado
amount-due = Importe pendiente
bank-holder = Titular de la cuenta
bank-iban = IBAN
bank-bic = BIC
bank-account = Cuenta
bank-reference = Referencia
bank-creditor-reference = Referencia estructurada
payment-qr = Escanee con la app de su banco para pagar por transferencia
pay-by-transfer = Pagar por transferencia
mention-exempt = Exento de IVA
mention-reverse-charge = Inversión del sujeto pasivo: IVA a cargo del cliente (artículo 196, Directiva 2006/112/CE)
mention-intra-community = Entrega intracomunitaria exenta de IVA (artículo 138, Directiva 2006/112/CE)
mention-export = Exportación fuera de la UE exenta de IVA (artículo 146, Directiva 2006/112/CE)
mention-not-subject = No sujeto a IVA
col-description = Descripción
col-qty = Cant.
col-unit-price = Precio unitario
col-tax = Impuesto
col-amount = Importe
items = Conceptos
billed-to = Facturado a
tax-id = NIF-IVA: { $id }
download-pdf = Descargar PDF
einvoice-xml = Factura electrónica (XML)
issued = Emitida
number = Número

## The invoice
invoice = Factura
invoice-title = Factura { $number } de { $org }
status-paid = Pagada
status-refunded = Reembolsada
status-processing = Pago en curso: confirmaremos cuando llegue
status-overdue = Vencida: vencía el { $due }
status-due = Vence el { $due }
pay-amount = Pagar { $amount }

## The quote
quote = Presupuesto
quote-title = Presupuesto { $number } de { $org }
quote-valid-until = Válido hasta el { $date }
quote-expired-on = Caducó el { $date }
quote-accepted = Aceptado: gracias
quote-declined = Rechazado
quote-for = Para
quote-accept = Aceptar { $amount }
quote-decline = Rechazar
quote-view-invoice = Ver su factura
quote-expired = Este presupuesto ha caducado
quote-expired-text = Era válido hasta el { $date }. No se ha aceptado nada: pida un nuevo presupuesto a { $org }.
quote-back = Volver al presupuesto

## The credit note
credit-note = Factura rectificativa
credit-note-title = Factura rectificativa { $number } de { $org }
for-invoice = De la factura
reason = Motivo

## The statement
statement = Extracto de cuenta
statement-title = Extracto de cuenta de { $customer } de { $org }
statement-period = Periodo: del { $from } al { $to }
statement-empty = Nada facturado, pagado ni adeudado en este periodo.
statement-in = En { $currency }
col-date = Fecha
col-reference = Referencia
col-what = Concepto
col-charged = Cargado
col-paid-or-credited = Pagado o abonado
col-balance = Saldo
balance-forward = Saldo anterior
balance-due = Saldo pendiente

## PDFs
pdf-invoice = FACTURA
pdf-credit-note = FACTURA RECTIFICATIVA
pdf-statement = EXTRACTO DE CUENTA
pdf-number = Número { $number }
pdf-issued = Emitida el { $date }
pdf-due = Vence el { $due }
pdf-status = Estado: { $status }
pdf-tax-id = NIF-IVA { $id }
pdf-line-tax = Impuesto: { $name } { $percent } %
pdf-for-invoice = De la factura { $number }
pdf-page = { $document } · página { $page } de { $pages }
pdf-invoice-footer = { $org } · factura { $number }
pdf-credit-note-footer = { $org } · factura rectificativa { $number }
pdf-paid-credited = Pagado/abonado
pdf-statement-footer = { $org } · extracto de cuenta de { $customer }
statement-truncated = Solo se muestran los primeros movimientos: pida un periodo más corto.
state-draft = borrador
state-open = pendiente
state-paid = pagada
state-void = anulada
state-uncollectible = incobrable
state-refunded = reembolsada
state-overdue = vencida

## Emails
mail-invoice-subject = Factura { $number } de { $org }
mail-invoice-body = Hola { $customer }:

    { $org } le ha enviado la factura { $number } por { $total }, con vencimiento el { $due }.
mail-transfer = Pagar por transferencia:
mail-reminder-subject-before = Recordatorio: la factura { $number } vence el { $due }
mail-reminder-subject-today = Recordatorio: la factura { $number } vence hoy
mail-reminder-subject-after = Recordatorio: la factura { $number } venció el { $due }
mail-reminder-body = Factura { $number } de { $org }: quedan { $left } por pagar de { $total }, con vencimiento el { $due }.
mail-receipt-subject = Recibo de { $number }
mail-receipt-body = Hola { $customer }:

    Hemos recibido su pago de { $amount } de la factura { $number } ({ $total }).
    ¡Gracias!
mail-hello = Hola { $customer }:
mail-quote-subject = Presupuesto { $number } de { $org }
mail-quote-body = Hola { $customer }:

    { $org } le ha enviado el presupuesto { $number } por { $total }, válido hasta el { $date }.

    Acéptelo o rechácelo aquí:
pay-automatically = Pagar automáticamente la próxima vez
pay-automatically-hint = Guarde una tarjeta o un mandato de adeudo directo SEPA: sus próximas facturas se cobrarán al emitirse.
saved-methods = Sus medios de pago guardados
method-card = Tarjeta { $brand } terminada en { $last4 }
method-debit = Adeudo directo SEPA, mandato { $reference }
method-default = se cobra automáticamente
remove-method = Eliminar
method-saved = Su medio de pago está guardado.
