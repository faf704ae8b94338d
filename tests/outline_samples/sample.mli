(* Sample OCaml interface for outlines. *)

type shape =
  | Circle of float
  | Square of float

val area : shape -> float
(** Its area. *)

val total :
  shape list -> float

module Registry : sig
  val add : shape -> unit
end
