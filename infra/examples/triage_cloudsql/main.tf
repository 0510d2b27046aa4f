provider "google" {
  project = var.project_id
  region  = var.region
}

locals {
  services = toset([
    "artifactregistry.googleapis.com",
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

# Workers and the database share one VPC; the instance is reachable only by private IP.
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

# Private service access: a peered range Google-managed services (Cloud SQL) allocate from.
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
