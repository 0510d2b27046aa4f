{%- from "module_source.j2" import module_source with context -%}

# Long-term memory in Firestore (native mode) with the composite index the store's
# prefix search needs, the vector index of recall across entities, point-in-time
# recovery and daily backups.
module "memory" {
  source = "{{ module_source("firestore_store") }}"

  project_id             = var.project_id
  location_id            = var.region
  worker_service_account = module.runtime.service_account_email
  kms_key_name           = var.kms_key_name
  # The vector index recall across entities (find_nearest) needs, of the embedder's
  # dimensions; null declares none.
  embedding_dimensions = var.embedding_dimensions

  depends_on = [google_project_service.this]
}
