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

# Long-term memory in Bigtable, with automated daily backups; the worker may read and
# write the table only.
module "memory" {
  source = "{{ modules }}bigtable_store{{ ref }}"

  project_id             = var.project_id
  instance_name          = "${local.name}-memory"
  zone                   = "${var.region}-b"
  worker_service_account = module.runtime.service_account_email
  deletion_protection    = var.deletion_protection
  kms_key_name           = var.kms_key_name

  depends_on = [google_project_service.this]
}
