# Workers run in a network of their own, with private IPs only: the subnetwork has Private
# Google Access (Pub/Sub, Bigtable, Firestore, Secret Manager, Artifact Registry and the
# Gemini and Vertex AI APIs answer there) and flow logs; the only ingress rule lets the
# workers talk to each other on Dataflow's ports. Nothing reaches the internet unless the
# model is outside Google (Cloud NAT), and a store on a private IP (Cloud SQL, Memorystore)
# joins through private service access.
locals {
  private_services = contains(["postgres", "redis"], var.store) ? 1 : 0
  # A model behind a Google API is reachable through Private Google Access; any other
  # (openai:, py:) needs a way out.
  google_model = contains(["fake", "rules"], var.model) || startswith(var.model, "gemini:")
  nat          = coalesce(var.enable_nat, !local.google_model) ? 1 : 0
  # Dataflow gives every worker VM this network tag.
  worker_tag = "dataflow"
}

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
    flow_sampling        = var.flow_log_sampling
    metadata             = "INCLUDE_ALL_METADATA"
  }
}

# Shuffle and streaming traffic between workers, and nothing else: a custom network
# denies all other ingress (no SSH or RDP from anywhere, as the default network allows).
resource "google_compute_firewall" "workers" {
  project     = var.project_id
  name        = "${local.name}-dataflow-workers"
  network     = google_compute_network.this.id
  description = "Dataflow workers to Dataflow workers, on the Dataflow ports only."
  direction   = "INGRESS"
  priority    = 1000
  source_tags = [local.worker_tag]
  target_tags = [local.worker_tag]

  allow {
    protocol = "tcp"
    ports    = ["12345-12346"]
  }

  log_config {
    metadata = "INCLUDE_ALL_METADATA"
  }
}

resource "google_compute_router" "nat" {
  count = local.nat

  project = var.project_id
  region  = var.region
  name    = "${local.name}-nat"
  network = google_compute_network.this.id
}

# Egress for a model API outside Google, for the workers' subnetwork only.
resource "google_compute_router_nat" "workers" {
  count = local.nat

  project                            = var.project_id
  region                             = var.region
  name                               = "${local.name}-workers"
  router                             = google_compute_router.nat[0].name
  nat_ip_allocate_option             = "AUTO_ONLY"
  source_subnetwork_ip_ranges_to_nat = "LIST_OF_SUBNETWORKS"

  subnetwork {
    name                    = google_compute_subnetwork.workers.id
    source_ip_ranges_to_nat = ["ALL_IP_RANGES"]
  }

  log_config {
    enable = true
    filter = "ERRORS_ONLY"
  }
}

# Private service access: a peered range Google-managed services allocate from.
resource "google_compute_global_address" "private_services" {
  count = local.private_services

  project       = var.project_id
  name          = "${local.name}-private-services"
  network       = google_compute_network.this.id
  purpose       = "VPC_PEERING"
  address_type  = "INTERNAL"
  prefix_length = 16
}

resource "google_service_networking_connection" "private_services" {
  count = local.private_services

  network                 = google_compute_network.this.id
  service                 = "servicenetworking.googleapis.com"
  reserved_peering_ranges = [google_compute_global_address.private_services[0].name]
}
