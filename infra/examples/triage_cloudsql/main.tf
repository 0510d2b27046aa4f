provider "google" {
  project = var.project_id
  region  = var.region
}

provider "google-beta" {
  project = var.project_id
  region  = var.region
}

locals {
  services = toset([
    "artifactregistry.googleapis.com",
    "cloudbuild.googleapis.com",
    "compute.googleapis.com",
    "dataflow.googleapis.com",
    "pubsub.googleapis.com",
    "secretmanager.googleapis.com",
    "servicenetworking.googleapis.com",
    "sqladmin.googleapis.com",
    "storage.googleapis.com",
  ])
}

resource "google_project_service" "this" {
  for_each = local.services

  project            = var.project_id
  service            = each.value
  disable_on_destroy = false
}

# Workers and the store share one VPC; the store is reachable only by private IP.
resource "google_compute_network" "this" {
  project                 = var.project_id
  name                    = "triage"
  auto_create_subnetworks = false

  depends_on = [google_project_service.this]
}

resource "google_compute_subnetwork" "workers" {
  project                  = var.project_id
  region                   = var.region
  name                     = "triage-workers"
  network                  = google_compute_network.this.id
  ip_cidr_range            = var.subnet_cidr
  private_ip_google_access = true
}

# Private service access: a peered range Google-managed services allocate from.
resource "google_compute_global_address" "private_services" {
  project       = var.project_id
  name          = "triage-private-services"
  network       = google_compute_network.this.id
  purpose       = "VPC_PEERING"
  address_type  = "INTERNAL"
  prefix_length = 16
}

resource "google_service_networking_connection" "private_services" {
  network                 = google_compute_network.this.id
  service                 = "servicenetworking.googleapis.com"
  reserved_peering_ranges = [google_compute_global_address.private_services.name]
}

module "runtime" {
  source = "../../modules/dataflow_runtime"

  project_id       = var.project_id
  region           = var.region
  name             = "triage"
  input_topics     = ["alerts", "answers"]
  output_topics    = ["outputs", "intents", "errors", "lifecycle"]
  launcher_members = var.launcher_members

  depends_on = [google_project_service.this]
}

module "memory" {
  source = "../../modules/postgres_store"

  project_id             = var.project_id
  region                 = var.region
  instance_name          = "triage-memory"
  tier                   = var.sql_tier
  private_network        = google_compute_network.this.id
  allocated_ip_range     = google_compute_global_address.private_services.name
  worker_service_account = module.runtime.service_account_email
  deletion_protection    = var.deletion_protection

  depends_on = [google_service_networking_connection.private_services]
}

# The store URI carries a credential, so it never travels as a job parameter: it lives in
# Secret Manager and the launcher passes only the secret version's name (longterm_secret).
resource "google_secret_manager_secret" "longterm" {
  project   = var.project_id
  secret_id = "triage-longterm"

  replication {
    auto {}
  }

  depends_on = [google_project_service.this]
}

resource "google_secret_manager_secret_version" "longterm" {
  secret      = google_secret_manager_secret.longterm.id
  secret_data = module.memory.longterm_memory
}

resource "google_secret_manager_secret_iam_member" "longterm_accessor" {
  project   = var.project_id
  secret_id = google_secret_manager_secret.longterm.secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${module.runtime.service_account_email}"
}

locals {
  # The Flex Template parameters (app/metadata.json); `make deploy` reads them from the
  # launcher_parameters output. None is a secret.
  parameters = {
    input_subscription   = module.runtime.subscriptions["alerts"]
    answers_subscription = module.runtime.subscriptions["answers"]
    outputs_topic        = module.runtime.topics["outputs"]
    intents_topic        = module.runtime.topics["intents"]
    errors_topic         = module.runtime.topics["errors"]
    lifecycle_topic      = module.runtime.topics["lifecycle"]
    model                = var.model
    longterm_secret      = google_secret_manager_secret_version.longterm.name
  }
}

# The streaming job itself, once `make deploy` has built the image and template: apply again
# with -var image_tag=TAG to let Terraform own the job (see docs/deploy.md).
module "job" {
  source = "../../modules/dataflow_job"
  count  = var.image_tag == null ? 0 : 1

  project_id            = var.project_id
  region                = var.region
  name                  = "triage"
  template_path         = module.runtime.template_path
  image                 = "${module.runtime.image_repository}/triage:${var.image_tag}"
  parameters            = local.parameters
  service_account_email = module.runtime.service_account_email
  temp_location         = module.runtime.temp_location
  staging_location      = module.runtime.staging_location
  subnetwork            = google_compute_subnetwork.workers.self_link
  max_workers           = var.max_workers
}
