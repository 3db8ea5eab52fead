select i.id, i.number_text, i.status as "status: InvoiceStatus", i.version, i.customer_id, i.customer_name,
       i.customer_email, i.customer_address, i.customer_tax_id, i.currency,
       i.due_date as "due_date: NaiveDate", i.payment_terms_days, i.subtotal_cents,
       i.discount_percent_milli, i.discount_amount_cents, i.discount_cents, i.tax_cents,
       i.total_cents, i.notes, i.amount_paid_cents, i.amount_credited_cents,
       array(select c.id from credit_notes c where c.invoice_id = i.id order by c.created_at)
           as "credit_notes!",
       i.payment_state as "payment_state: PaymentState",
       invoice_overdue(i.status, i.due_date, o.time_zone) as "overdue!",
       i.public_token, i.finalized_at as "finalized_at: DateTime<Utc>",
       i.first_viewed_at as "first_viewed_at: DateTime<Utc>",
       i.created_at as "created_at: DateTime<Utc>",
       i.collection_method as "collection_method: CollectionMethod",
       coalesce((select jsonb_agg(jsonb_build_object(
                        'n', a.n, 'state', a.state, 'reason', a.reason,
                        'at', coalesce(a.sent_at, a.updated_at)) order by a.n)
                 from charge_attempts a
                 where a.invoice_id = i.id and a.state not in ('scheduled', 'canceled')),
                '[]') as "charge_attempts!: sqlx::types::Json<Vec<ChargeAttempt>>",
       coalesce((select jsonb_agg(jsonb_build_object(
                        'network', 'peppol', 'state', t.state, 'instance_id', t.instance_id,
                        'reason', t.reason, 'profile', t.profile, 'at', t.updated_at,
                        'document', case when t.credit_note_id is null then 'invoice'
                                         else 'credit_note' end) order by t.created_at, t.id)
                 from peppol_transmissions t where t.invoice_id = i.id),
                '[]') as "transmissions!: sqlx::types::Json<Vec<Transmission>>",
       i.kind, i.fee_for, i.payment_reference
