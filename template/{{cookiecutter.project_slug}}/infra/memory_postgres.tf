{%- from "module_source.j2" import module_source with context -%}

# Long-term memory in Cloud SQL for PostgreSQL: private IP, the CIS logging flags, and the
# workers signed in with IAM database authentication through the Cloud SQL connector
# (postgresql+cloudsql://): no password exists. For the fallback, a built-in password
# user whose URI lives in Secret Manager, set auth_mode = "password" and grant the workers
# the secret (see the module's README).
module "memory" {
  source = "{{ module_source("postgres_store") }}"

  project_id          = var.project_id
  region              = var.region
  instance_name       = "${local.name}-memory"
  private_network     = google_compute_network.this.id
  allocated_ip_range  = google_compute_global_address.private_services.name
  deletion_protection = var.deletion_protection
  kms_key_name        = var.kms_key_name
  # The workers' IAM database user and roles/cloudsql.client + instanceUser on this instance.
  worker_service_account = module.runtime.service_account_email

  depends_on = [google_service_networking_connection.private_services]
}
