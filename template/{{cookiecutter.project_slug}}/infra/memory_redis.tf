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

# Long-term memory in Memorystore for Redis (private service access, AUTH and TLS). The
# instance's CA is not a public one: make deploy writes it to certs/ and the Dockerfile
# bakes it in at ca_path; the URI with the AUTH string is only in Secret Manager.
module "memory" {
  source = "{{ modules }}redis_store{{ ref }}"

  project_id         = var.project_id
  region             = var.region
  name               = "${local.name}-memory"
  authorized_network = google_compute_network.this.id
  reserved_ip_range  = google_compute_global_address.private_services.name
  ca_path            = "/opt/{{ cookiecutter.package_name }}/certs/redis-ca.pem"
  kms_key_name       = var.kms_key_name

  depends_on = [google_service_networking_connection.private_services]
}
