provider "google" {
  project = var.project_id
  region  = var.region
}

provider "google-beta" {
  project = var.project_id
  region  = var.region
}

# Everything the four examples share: APIs, the Dataflow runtime (service account, buckets,
# image repository, topics with a dead-letter policy, model-key secret) and the job.
module "deployment" {
  source = "../../modules/triage_deployment"

  project_id             = var.project_id
  region                 = var.region
  store                  = "postgres"
  longterm_memory_secret = module.memory.longterm_memory
  model                  = var.model
  image_tag              = var.image_tag
  subnetwork             = google_compute_subnetwork.workers.self_link
  max_workers            = var.max_workers
  launcher_members       = var.launcher_members
}

# Workers and the store share one VPC; the store is reachable only by private IP.
resource "google_compute_network" "this" {
  project                 = module.deployment.project_id
  name                    = "triage"
  auto_create_subnetworks = false
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

module "memory" {
  source = "../../modules/postgres_store"

  project_id             = var.project_id
  region                 = var.region
  instance_name          = "triage-memory"
  tier                   = var.sql_tier
  private_network        = google_compute_network.this.id
  allocated_ip_range     = google_compute_global_address.private_services.name
  worker_service_account = module.deployment.service_account_email
  deletion_protection    = var.deletion_protection

  depends_on = [google_service_networking_connection.private_services]
}
