package dev.ldp.client

/** The version of this client library (the Maven artifact's version). */
public const val LDP_CLIENT_VERSION: String = "0.1.0"
