-- Notices to an account's previous address when its password or address changes.
alter table outbox drop constraint outbox_kind_check;
alter table outbox add constraint outbox_kind_check
    check (kind in ('invoice_email', 'payment_receipt', 'invitation', 'verify_email', 'reset_password',
                    'account_notice'));
