{%- from "module_source.j2" import module_source with context -%}

# Long-term memory in Memorystore for Redis (private service access, AUTH and TLS). The
# instance's CA is not a public one: make deploy writes it to certs/ and the Dockerfile
# bakes it in at ca_path; the URI with the AUTH string is only in Secret Manager.
module "memory" {
  source = "{{ module_source("redis_store") }}"

  project_id         = var.project_id
  region             = var.region
  name               = "${local.name}-memory"
  authorized_network = google_compute_network.this.id
  reserved_ip_range  = google_compute_global_address.private_services.name
  ca_path            = "/opt/{{ cookiecutter.package_name }}/certs/redis-ca.pem"
  kms_key_name       = var.kms_key_name

  depends_on = [google_service_networking_connection.private_services]
}
