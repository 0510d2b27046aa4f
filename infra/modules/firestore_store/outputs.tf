output "longterm_memory" {
  description = "Value for AgentConfig.longterm_memory: firestore://PROJECT/COLLECTION, plus ?database=NAME for a named database."
  value       = "firestore://${var.project_id}/${var.collection}${local.database == "(default)" ? "" : "?database=${local.database}"}"
}

output "database" {
  description = "Firestore database id."
  value       = local.database
}

output "collection" {
  description = "Collection that holds the memory documents."
  value       = var.collection
}

output "index_id" {
  description = "Id of the (entity, key) composite index the prefix search needs."
  value       = google_firestore_index.entity_key.id
}

output "embedding_index_id" {
  description = "Id of the vector index on the embedding field that recall across entities (find_nearest) needs; null when embedding_dimensions is null."
  value       = one(google_firestore_index.embedding[*].id)
}
