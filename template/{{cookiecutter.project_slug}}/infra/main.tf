{%- from "module_source.j2" import module_source with context -%}
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
    "cloudbuild.googleapis.com",
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

# The workers' own network, private IPs only: Private Google Access reaches Pub/Sub,
# the stores, Secret Manager and Artifact Registry; flow logs record the traffic; the
# only ingress rule lets workers talk to each other on Dataflow's ports (a custom network
# denies the rest, unlike the default network's SSH and RDP rules).
resource "google_compute_network" "this" {
  project                 = var.project_id
  name                    = local.name
  auto_create_subnetworks = false

  depends_on = [google_project_service.this]
}

resource "google_compute_subnetwork" "workers" {
  project                  = var.project_id
  region                   = var.region
  name                     = "${local.name}-workers"
  network                  = google_compute_network.this.id
  ip_cidr_range            = var.subnet_cidr
  private_ip_google_access = true

  log_config {
    aggregation_interval = "INTERVAL_5_SEC"
    flow_sampling        = 0.5
    metadata             = "INCLUDE_ALL_METADATA"
  }
}

resource "google_compute_firewall" "workers" {
  project     = var.project_id
  name        = "${local.name}-dataflow-workers"
  network     = google_compute_network.this.id
  description = "Dataflow workers to Dataflow workers, on the Dataflow ports only."
  direction   = "INGRESS"
  source_tags = ["dataflow"]
  target_tags = ["dataflow"]

  allow {
    protocol = "tcp"
    ports    = ["12345-12346"]
  }
}
{%- if cookiecutter.model_provider == "openai" %}

# The OpenAI API is outside Google: Cloud NAT gives the workers, and nothing else, a way out.
resource "google_compute_router" "nat" {
  project = var.project_id
  region  = var.region
  name    = "${local.name}-nat"
  network = google_compute_network.this.id
}

resource "google_compute_router_nat" "workers" {
  project                            = var.project_id
  region                             = var.region
  name                               = "${local.name}-workers"
  router                             = google_compute_router.nat.name
  nat_ip_allocate_option             = "AUTO_ONLY"
  source_subnetwork_ip_ranges_to_nat = "LIST_OF_SUBNETWORKS"

  subnetwork {
    name                    = google_compute_subnetwork.workers.id
    source_ip_ranges_to_nat = ["ALL_IP_RANGES"]
  }
}
{%- endif %}

# Worker and build service accounts, buckets, image repository, the model-key secret, and
# the topics: the pipeline reads the inputs (each subscription with a dead-letter policy)
# and may publish only to the outputs.
module "runtime" {
  source = "{{ module_source("dataflow_runtime") }}"

  project_id       = var.project_id
  region           = var.region
  name             = local.name
  input_topics     = [{% if cookiecutter.include_hitl == "yes" %}"events", "answers"{% else %}"events"{% endif %}]
  output_topics    = ["outputs", "intents", "errors"]
  launcher_members = var.launcher_members
{%- if cookiecutter.include_hitl == "yes" %}
  input_publishers = { answers = var.approvers }
{%- endif %}
  kms_key_name     = var.kms_key_name

  depends_on = [google_project_service.this]
}
