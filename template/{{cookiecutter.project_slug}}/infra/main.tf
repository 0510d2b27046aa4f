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
{%- if backend == "postgres" or cookiecutter.model_provider != "fake" %}
    "secretmanager.googleapis.com",
{%- endif %}
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

# Worker service account, buckets, image repository and the events, outputs
# and errors topics.
module "runtime" {
  source = "{{ modules }}dataflow_runtime{{ ref }}"

  project_id       = var.project_id
  region           = var.region
  name             = local.name
  launcher_members = var.launcher_members

  depends_on = [google_project_service.this]
}

# Tool intents leave on a topic of their own{% if cookiecutter.include_hitl == "yes" %}; answers to approvals arrive on another{% endif %}.
resource "google_pubsub_topic" "intents" {
  project = var.project_id
  name    = "${local.name}-intents"

  depends_on = [google_project_service.this]
}

resource "google_pubsub_topic_iam_member" "intents_publisher" {
  project = var.project_id
  topic   = google_pubsub_topic.intents.name
  role    = "roles/pubsub.publisher"
  member  = "serviceAccount:${module.runtime.service_account_email}"
}
{%- if cookiecutter.include_hitl == "yes" %}

resource "google_pubsub_topic" "answers" {
  project = var.project_id
  name    = "${local.name}-answers"

  depends_on = [google_project_service.this]
}

resource "google_pubsub_subscription" "answers" {
  project                    = var.project_id
  name                       = "${local.name}-answers"
  topic                      = google_pubsub_topic.answers.id
  ack_deadline_seconds       = 60
  message_retention_duration = "604800s"
}

resource "google_pubsub_subscription_iam_member" "answers_subscriber" {
  project      = var.project_id
  subscription = google_pubsub_subscription.answers.name
  role         = "roles/pubsub.subscriber"
  member       = "serviceAccount:${module.runtime.service_account_email}"
}
{%- endif %}
