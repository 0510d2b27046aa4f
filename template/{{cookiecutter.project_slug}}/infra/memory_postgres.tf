{#- The module source convention: a plain string (Terraform allows no variables
    there) pinned to the runtime version of beam_agents_requirement. `==X.Y.Z` pins
    `?ref=vX.Y.Z` of the repository; `@ file:///checkout` points at that checkout
    (made relative by hooks/post_gen_project.py). -#}
{%- set requirement = cookiecutter.beam_agents_requirement -%}
{%- if "file://" in requirement -%}
{%- set modules = requirement.split("file://", 1)[1].strip().rstrip("/") ~ "/infra/modules/" -%}
{%- set ref = "" -%}
{%- else -%}
{%- set modules = "git::" ~ cookiecutter._beam_agents_repository ~ ".git//infra/modules/" -%}
{%- set ref = "?ref=v" ~ requirement.split("==", 1)[1].strip() -%}
{%- endif -%}

# Long-term memory in Cloud SQL for PostgreSQL: private IP, the CIS logging flags, and the
# workers signed in with IAM database authentication through the Cloud SQL connector
# (postgresql+cloudsql://): no password exists. For the fallback, a built-in password
# user whose URI lives in Secret Manager, set auth_mode = "password" and grant the workers
# the secret (see the module's README).
module "memory" {
  source = "{{ modules }}postgres_store{{ ref }}"

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
