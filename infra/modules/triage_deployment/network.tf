# A store on a private IP (Cloud SQL, Memorystore) needs the workers and the store in one VPC,
# reachable only by private IP; set subnet_cidr for it. Stores reached over Google APIs need
# none of this.
locals {
  private_network = var.subnet_cidr == null ? 0 : 1
}

resource "google_compute_network" "this" {
  count = local.private_network

  project                 = var.project_id
  name                    = local.name
  auto_create_subnetworks = false

  depends_on = [google_project_service.this]
}

resource "google_compute_subnetwork" "workers" {
  count = local.private_network

  project                  = var.project_id
  region                   = var.region
  name                     = "${local.name}-workers"
  network                  = google_compute_network.this[0].id
  ip_cidr_range            = var.subnet_cidr
  private_ip_google_access = true
}

# Private service access: a peered range Google-managed services allocate from.
resource "google_compute_global_address" "private_services" {
  count = local.private_network

  project       = var.project_id
  name          = "${local.name}-private-services"
  network       = google_compute_network.this[0].id
  purpose       = "VPC_PEERING"
  address_type  = "INTERNAL"
  prefix_length = 16
}

resource "google_service_networking_connection" "private_services" {
  count = local.private_network

  network                 = google_compute_network.this[0].id
  service                 = "servicenetworking.googleapis.com"
  reserved_peering_ranges = [google_compute_global_address.private_services[0].name]
}
