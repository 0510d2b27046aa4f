{%- from "module_source.j2" import module_source with context -%}

# Long-term memory in Bigtable, with automated daily backups; the worker may read and
# write the table only.
module "memory" {
  source = "{{ module_source("bigtable_store") }}"

  project_id             = var.project_id
  instance_name          = "${local.name}-memory"
  zone                   = "${var.region}-b"
  worker_service_account = module.runtime.service_account_email
  deletion_protection    = var.deletion_protection
  kms_key_name           = var.kms_key_name

  depends_on = [google_project_service.this]
}
