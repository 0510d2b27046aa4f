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
{%- set backend = cookiecutter.longterm_backend %}
provider "google" {
  project = var.project_id
  region  = var.region
}

# Secret Manager is on for every project: the runtime module always creates the
# model-key secret (left empty, and unread, with the fake model).
locals {
  name = "{{ cookiecutter.project_slug[:20] | trim('-') }}"
  services = toset([
    "artifactregistry.googleapis.com",
{%- if backend == "bigtable" %}
    "bigtable.googleapis.com",
    "bigtableadmin.googleapis.com",
{%- endif %}
    "compute.googleapis.com",
    "dataflow.googleapis.com",
{%- if backend == "firestore" %}
    "firestore.googleapis.com",
{%- endif %}
    "pubsub.googleapis.com",
{%- if backend == "redis" %}
    "redis.googleapis.com",
{%- endif %}
    "secretmanager.googleapis.com",
{%- if backend in ("postgres", "redis") %}
    "servicenetworking.googleapis.com",
{%- endif %}
{%- if backend == "postgres" %}
    "sqladmin.googleapis.com",
{%- endif %}
    "storage.googleapis.com",
  ])
}

resource "google_project_service" "this" {
  for_each = local.services

  project            = var.project_id
  service            = each.value
  disable_on_destroy = false
}

# Worker service account, buckets, image repository, the model-key secret, and the
# topics: the pipeline reads the inputs (each subscription with a dead-letter policy)
# and may publish only to the outputs.
module "runtime" {
  source = "{{ modules }}dataflow_runtime{{ ref }}"

  project_id       = var.project_id
  region           = var.region
  name             = local.name
  input_topics     = [{% if cookiecutter.include_hitl == "yes" %}"events", "answers"{% else %}"events"{% endif %}]
  output_topics    = ["outputs", "intents", "errors"]
  launcher_members = var.launcher_members

  depends_on = [google_project_service.this]
}
