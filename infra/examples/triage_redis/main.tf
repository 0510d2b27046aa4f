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
  store                  = "redis"
  longterm_memory_secret = "${module.memory.longterm_memory}?ssl_ca_certs=${local.redis_ca_path}"
  model                  = var.model
  image_tag              = var.image_tag
  subnetwork             = google_compute_subnetwork.workers.self_link
  max_workers            = var.max_workers
  launcher_members       = var.launcher_members
}

locals {
  # The instance's CA is not a public one: make deploy bakes the server_ca_cert output into
  # the image at this path (app/certs/redis-ca.pem in the build context).
  redis_ca_path = "/opt/triage/app/certs/redis-ca.pem"
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
  source = "../../modules/redis_store"

  project_id         = var.project_id
  region             = var.region
  name               = "triage-memory"
  authorized_network = google_compute_network.this.id
  reserved_ip_range  = google_compute_global_address.private_services.name
  tier               = var.redis_tier
  memory_size_gb     = var.memory_size_gb

  depends_on = [google_service_networking_connection.private_services]
}
