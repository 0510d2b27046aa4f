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

# Long-term memory in Firestore (native mode) with the composite index the store's
# prefix search needs, the vector index of recall across entities, point-in-time
# recovery and daily backups.
module "memory" {
  source = "{{ modules }}firestore_store{{ ref }}"

  project_id             = var.project_id
  location_id            = var.region
  worker_service_account = module.runtime.service_account_email
  kms_key_name           = var.kms_key_name
  # The vector index recall across entities (find_nearest) needs, of the embedder's
  # dimensions; null declares none.
  embedding_dimensions = var.embedding_dimensions

  depends_on = [google_project_service.this]
}
